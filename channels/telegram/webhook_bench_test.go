package telegram

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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
// update once the last was answered. Reported: requests/s, and p50/p99 in ms from the
// request being sent to its 200 and to the reply.
func BenchmarkWebhookTelegram(b *testing.B) {
	b.Run("http", func(b *testing.B) { benchWebhook(b, postOverHTTP) })
	// direct hands the same bodies to the webhook's accept step without HTTP: its time to
	// the commit beside http's time to the 200 is what the HTTP layer adds.
	b.Run("direct", func(b *testing.B) { benchWebhook(b, acceptDirect) })
}

// webhookSend delivers one update body and returns once it was answered 200 (http) or
// committed (direct).
type webhookSend func(h *hookEnv, client *http.Client, body []byte) error

func postOverHTTP(h *hookEnv, client *http.Client, body []byte) error {
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+WebhookPath, strings.NewReader(string(body)))
	req.Header.Set(secretHeader, hookSecret)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}

func acceptDirect(h *hookEnv, _ *http.Client, body []byte) error {
	code, why, handle := h.Channel.disp.Load().acceptWebhook(body)
	if code != http.StatusOK {
		return fmt.Errorf("answered %d: %s", code, why)
	}
	if handle != nil {
		handle()
	}
	return nil
}

func benchWebhook(b *testing.B, send webhookSend) {
	const senders = 20
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
	var to200 []time.Duration
	trip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		id := nextID.Add(1)
		body, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]any{
			"message_id": id, "date": 1_700_000_000, "text": text,
			"chat": map[string]any{"id": chat, "type": "private", "first_name": "b"},
			"from": map[string]any{"id": chat, "is_bot": false, "first_name": "b"},
		}})
		reply := replies.Expect(text)
		start := time.Now()
		if err := send(h, client, body); err != nil {
			return 0, fmt.Errorf("update %d: %w", id, err)
		}
		ok := time.Since(start)
		mu.Lock()
		to200 = append(to200, ok)
		mu.Unlock()
		at, err := reply()
		return at.Sub(start), err
	}
	for c := range senders { // the first message of a chat makes its session
		if _, err := trip(int64(7000+c), -1); err != nil {
			b.Fatal(err)
		}
	}
	to200 = nil
	latencies, elapsed := channeltest.RoundTrips(b, senders, func(w, n int) (time.Duration, error) {
		return trip(int64(7000+w), n)
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(channeltest.Percentile(to200, 0.50), "p50_200_ms")
	b.ReportMetric(channeltest.Percentile(to200, 0.99), "p99_200_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "p50_reply_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "p99_reply_ms")
}
