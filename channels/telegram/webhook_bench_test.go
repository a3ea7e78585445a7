package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
)

// BenchmarkWebhookTelegram measures webhook mode end to end: 20 senders post updates
// (with the secret header) through a real httpserver.Server, each is committed to the
// inbox before its 200 (concurrent requests share commits), and the engine (on SQLite,
// with an instant echoing model) answers it; a round trip ends when the reply's
// sendMessage reaches the fake Bot API. Each sender has its own chat and posts its next
// update once the last was answered (or, paced, when it is due). Reported: requests/s, p50/p99 in ms from the request
// being sent to its 200 (as the client saw it, and as the server had it out: srv_; the
// difference is the benchmark's client goroutines waiting for the CPU the process shares)
// and to the reply, durable inbox writes and fsynced store transactions per request, and
// the whole test process's CPU and disk writes (write_bytes) per request; recent-B is the
// size of the recent update ids in the stored inbox record at the end.
func BenchmarkWebhookTelegram(b *testing.B) {
	b.Run("http", func(b *testing.B) { benchWebhook(b, func(int) bool { return true }) })
	// direct hands the same requests to the route's handler without the network and
	// net/http (the 200 is timed when the handler writes it).
	b.Run("direct", func(b *testing.B) { benchWebhook(b, func(int) bool { return false }) })
	// mixed sends every other request of each sender directly, the rest over HTTP, at
	// the same time under the same load: http_p50_ms/http_p99_ms are what the HTTP layer
	// adds (the percentiles over HTTP less those of the direct ones).
	b.Run("mixed", func(b *testing.B) { benchWebhook(b, func(n int) bool { return n%2 == 0 }) })
	// The cases above are a closed loop: each sender's next update goes when its reply
	// came, so 20 senders keep both CPUs busy whatever the gateway's speed, and each
	// request waits in the scheduler's queue at each hop. paced=R offers R updates/s in
	// all on a schedule instead (a sender still waits for its reply; late_trips counts
	// the updates that were due before it came): the time to the 200 at a given load.
	for _, rate := range webhookRates {
		b.Run(fmt.Sprintf("paced=%d", rate), func(b *testing.B) {
			b.Run("http", func(b *testing.B) { benchWebhookAt(b, float64(rate), func(int) bool { return true }) })
			b.Run("mixed", func(b *testing.B) { benchWebhookAt(b, float64(rate), channeltest.Alternate(webhookSenders)) })
		})
	}
}

// webhookSenders is how many senders the webhook benchmarks run, each with its own chat.
const webhookSenders = 20

// webhookRates are the offered rates (updates/s) of the paced cases: about a sixth and
// a third of what the closed loop reaches on two quiet CPUs (at 1000/s, two other
// jobs on the machine were enough to make the run fall behind).
var webhookRates = []int{250, 500}

// webhookSend delivers one update body and returns when it was answered 200, to the
// sender (at) and by the server (out).
type webhookSend func(h *hookEnv, client *http.Client, body []byte, id string) (at, out time.Time, err error)

// postOverHTTP returns when the client had the 200 and when the server had it out.
func postOverHTTP(h *hookEnv, client *http.Client, body []byte, id string) (at, out time.Time, err error) {
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+WebhookPath, strings.NewReader(string(body)))
	req.Header.Set(secretHeader, hookSecret)
	req.Header.Set(channeltest.StampHeader, id)
	resp, err := client.Do(req)
	if err != nil {
		return at, out, err
	}
	at = time.Now()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return at, out, fmt.Errorf("answered %d", resp.StatusCode)
	}
	out, ok := h.stamps.Take(id)
	if !ok {
		return at, out, errors.New("the server noted no answer")
	}
	return at, out, nil
}

func serveDirect(h *hookEnv, _ *http.Client, body []byte, _ string) (at, out time.Time, err error) {
	req, _ := http.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(string(body)))
	req.Header.Set(secretHeader, hookSecret)
	w := channeltest.NewStampWriter()
	h.Channel.serveHTTP(w, req)
	if w.Code != http.StatusOK {
		return at, out, fmt.Errorf("answered %d", w.Code)
	}
	return w.At, w.At, nil
}

// benchWebhook runs the closed loop; overHTTP says which requests (by their number) go
// over HTTP, the others are served directly.
func benchWebhook(b *testing.B, overHTTP func(n int) bool) { benchWebhookAt(b, 0, overHTTP) }

// benchWebhookAt runs the benchmark at rate updates/s (paced), or as a closed loop when
// rate is 0.
func benchWebhookAt(b *testing.B, rate float64, overHTTP func(n int) bool) {
	const senders = webhookSenders
	replies := channeltest.NewReplies()
	h := newHookEnv(b, func(e *env) {
		e.Log = slog.New(slog.DiscardHandler)
		e.Core.PerSession, e.Core.MaxIterations = false, 0
		e.Model.Echo("re: ")
		e.api.mu.Lock()
		e.api.onSent = func(_ int64, text string, at time.Time) { replies.Seen(text, at) }
		e.api.mu.Unlock()
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	var nextID atomic.Int64
	nextID.Store(500_000)
	var mu sync.Mutex
	var viaHTTP, server, direct []time.Duration
	trip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		id := nextID.Add(1)
		body, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]any{
			"message_id": id, "date": 1_700_000_000, "text": text,
			"chat": map[string]any{"id": chat, "type": "private", "first_name": "b"},
			"from": map[string]any{"id": chat, "is_bot": false, "first_name": "b"},
		}})
		reply := replies.Expect(text)
		send, to := webhookSend(serveDirect), &direct
		if overHTTP(n) {
			send, to = postOverHTTP, &viaHTTP
		}
		start := time.Now()
		ok, out, err := send(h, client, body, strconv.FormatInt(id, 10))
		if err != nil {
			return 0, fmt.Errorf("update %d: %w", id, err)
		}
		mu.Lock()
		*to = append(*to, ok.Sub(start))
		if to == &viaHTTP {
			server = append(server, out.Sub(start))
		}
		mu.Unlock()
		at, err := reply()
		return at.Sub(start), err
	}
	for c := range senders { // the first message of a chat makes its session
		if _, err := trip(int64(7000+c), -1); err != nil {
			b.Fatal(err)
		}
	}
	viaHTTP, server, direct = nil, nil, nil
	saves, fsyncs, use := h.disk.saves.Load(), h.Store.GroupStats().Durable, channeltest.ReadUsage()
	latencies, elapsed := channeltest.Drive(b, senders, rate, func(w, n int) (time.Duration, error) {
		return trip(int64(7000+w), n)
	})
	b.ReportMetric(float64(h.disk.saves.Load()-saves)/float64(b.N), "saves/req")
	b.ReportMetric(float64(h.Store.GroupStats().Durable-fsyncs)/float64(b.N), "fsyncs/req")
	channeltest.ReportUsage(b, use, b.N) // a request is a message: cpu-ms/msg, disk-KB/msg
	if v, _, err := h.Store.ChannelState(context.Background(), Name, h.account(), inboxKey); err == nil {
		var fields map[string]json.RawMessage
		_ = json.Unmarshal([]byte(v), &fields)
		b.ReportMetric(float64(len(fields["recent"])+len(fields["recent_runs"])), "recent-B")
	}
	channeltest.ReportWebhook(b, elapsed, channeltest.WebhookTimes{HTTP: viaHTTP, Server: server, Direct: direct, Replies: latencies})
}
