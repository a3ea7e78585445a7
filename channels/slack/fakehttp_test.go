package slack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
)

// testSigningSecret is the app's signing secret in mode http tests.
const testSigningSecret = "8f742231b10e8888abcd99yyyzzz85a5SECRETsign"

// hookSender delivers the fake's envelopes as Slack's HTTP requests: events as JSON to
// /events, slash commands as a form to /commands, interactions as payload= to
// /interactivity, each signed now. Each request runs on its own goroutine, as Slack's do;
// its 200 is recorded as the envelope's ack (the body as the ack's payload).
type hookSender struct {
	base   string
	secret string
	client *http.Client // nil: http.DefaultClient

	mu     sync.Mutex
	status map[string]int // envelope id -> the answer's status
	bodies map[string]string
	wg     sync.WaitGroup
}

func newHookSender(base, secret string) *hookSender {
	return &hookSender{base: base, secret: secret, status: map[string]int{}, bodies: map[string]string{}}
}

// request is what Slack would send for an envelope of kind.
func slackRequest(kind string, payload any) (path, ctype string, body []byte) {
	data, _ := json.Marshal(payload)
	switch kind {
	case "slash_commands":
		var fields map[string]any
		_ = json.Unmarshal(data, &fields)
		form := url.Values{}
		for k, v := range fields {
			form.Set(k, fmt.Sprint(v))
		}
		return CommandsPath, "application/x-www-form-urlencoded", []byte(form.Encode())
	case "interactive":
		return InteractivityPath, "application/x-www-form-urlencoded", []byte("payload=" + url.QueryEscape(string(data)))
	}
	return EventsPath, "application/json", data
}

func (h *hookSender) send(f *fakeSlack, id, kind string, payload any, retry int) {
	path, ctype, body := slackRequest(kind, payload)
	h.wg.Go(func() {
		code, answer, err := h.post(path, ctype, body, strconv.FormatInt(time.Now().Unix(), 10), retry)
		if err != nil {
			f.t.Errorf("posting %s: %v", path, err)
			return
		}
		h.mu.Lock()
		h.status[id], h.bodies[id] = code, answer
		h.mu.Unlock()
		f.mu.Lock()
		if code == http.StatusOK {
			var p json.RawMessage
			if strings.TrimSpace(answer) != "" {
				p = json.RawMessage(answer)
			}
			f.acks[id] = ack{At: time.Now(), Payload: p}
		}
		f.bump()
		f.mu.Unlock()
	})
}

// post sends one signed request; ts is X-Slack-Request-Timestamp.
func (h *hookSender) post(path, ctype string, body []byte, ts string, retry int) (int, string, error) {
	client := h.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(h.request(path, ctype, body, ts, retry))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// request is the signed request post sends.
func (h *hookSender) request(path, ctype string, body []byte, ts string, retry int) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", channeltest.SlackSignature(h.secret, ts, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	return req
}

// statusOf is the answer to envelope id's request, 0 while there is none.
func (h *hookSender) statusOf(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status[id]
}
