package slack

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
)

// BenchmarkWebhookSlack measures mode http end to end: 20 senders post signed Events API
// mentions through a real httpserver.Server, each is committed to the inbox before its 200
// (concurrent requests share commits), and the engine (on SQLite, with an instant echoing
// model) answers it in the thread; a round trip ends when the reply's chat.postMessage
// reaches the fake Web API. Each sender has its own channel and posts its next mention once
// the last was answered. Reported: requests/s, and p50/p99 in ms from the request being
// sent to its 200 and to the reply.
func BenchmarkWebhookSlack(b *testing.B) {
	const senders = 20
	replies := channeltest.NewReplies()
	e := newEnv(b, httpMode, func(e *env) {
		e.Log = slog.New(slog.DiscardHandler)
		e.Core.PerSession, e.Core.MaxIterations = false, 0
		e.Model.Echo("re: ")
		e.api.mu.Lock()
		e.api.onPost = func(_ string, text string, at time.Time) { replies.Seen(text, at) }
		e.api.mu.Unlock()
	})
	var mu sync.Mutex
	var to200 []time.Duration
	trip := func(w, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d from sender %d", n, w)
		ts := e.api.userTS()
		ch := "C0B" + strconv.Itoa(w)
		inner := map[string]any{"type": "app_mention", "user": "U0B" + strconv.Itoa(w), "text": "<@UBOT> " + text, "ts": ts, "channel": ch, "event_ts": ts}
		_, ctype, body := slackRequest("events_api", e.api.eventCallback("Ev"+ts, inner))
		reply := replies.Expect(text)
		start := time.Now()
		code, ans, err := e.hook.post(EventsPath, ctype, body, strconv.FormatInt(start.Unix(), 10), 0)
		if err != nil {
			return 0, err
		}
		if code != http.StatusOK {
			return 0, fmt.Errorf("event answered %d %s", code, ans)
		}
		mu.Lock()
		to200 = append(to200, time.Since(start))
		mu.Unlock()
		at, err := reply()
		return at.Sub(start), err
	}
	for w := range senders { // the first mention of a channel makes its session
		if _, err := trip(w, -1); err != nil {
			b.Fatal(err)
		}
	}
	to200 = nil
	latencies, elapsed := channeltest.RoundTrips(b, senders, trip)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(channeltest.Percentile(to200, 0.50), "p50_200_ms")
	b.ReportMetric(channeltest.Percentile(to200, 0.99), "p99_200_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "p50_reply_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "p99_reply_ms")
}
