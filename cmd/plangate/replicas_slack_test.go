package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/slack"
)

// The Slack side of the multi-replica tests: mode http (the Events API), its Web API the
// fake of slack_kill_test.go, its events signed here as Slack signs them.

// replicaSigningSecret is the Slack app's signing secret in the replica tests.
const replicaSigningSecret = "replica-slack-signing-secret"

// slackDM is the Events API body of event n: person dm's text in their DM with the bot.
func slackDM(n, dm int, text string) string {
	ts := fmt.Sprintf("1800000000.%06d", n)
	inner, _ := json.Marshal(map[string]any{"type": "message", "channel_type": "im", "user": fmt.Sprintf("U0SOAK%d", dm),
		"text": text, "ts": ts, "channel": fmt.Sprintf("D0SOAK%d", dm), "event_ts": ts})
	return slackEventCallback(fmt.Sprintf("EvREP%d", n), string(inner))
}

// postSlackEvent sends body to a replica's Events URL, signed now, as Slack's retry
// number retry (0: the first delivery), and returns the answer's status.
func postSlackEvent(ctx context.Context, base, body string, retry int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+slack.EventsPath, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10) // the replica checks Slack's 5-minute window
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", channeltest.SlackSignature(replicaSigningSecret, ts, []byte(body)))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_error")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// modelHold makes the echo model hold every turn that mentions "hold-" until opened: a
// turn in flight, with its event acknowledged and not handled, when its replica is
// killed. A held request whose client goes away is answered by nobody.
type modelHold struct {
	mu      sync.Mutex
	seen    map[string]bool // the hold- words of requests held so far
	changed chan struct{}
	open    chan struct{}
}

var holdWord = regexp.MustCompile(`hold-[a-z]+`)

func newModelHold() *modelHold {
	return &modelHold{seen: map[string]bool{}, changed: make(chan struct{}), open: make(chan struct{})}
}

func (h *modelHold) wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if words := holdWord.FindAll(body, -1); len(words) > 0 {
			h.mu.Lock()
			for _, w := range words {
				h.seen[string(w)] = true
			}
			close(h.changed)
			h.changed = make(chan struct{})
			open := h.open
			h.mu.Unlock()
			select {
			case <-open:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r)
	}
}

// wait returns once the model holds a turn for each of words.
func (h *modelHold) wait(t *testing.T, ctx context.Context, words ...string) {
	t.Helper()
	for {
		h.mu.Lock()
		all, changed := true, h.changed
		for _, w := range words {
			all = all && h.seen[w]
		}
		h.mu.Unlock()
		if all {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the model never held turns for %v", words)
		}
	}
}

// release lets every held turn, and every later one, answer.
func (h *modelHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.open:
	default:
		close(h.open)
	}
}
