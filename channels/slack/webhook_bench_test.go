package slack

import (
	"errors"
	"fmt"
	"io"
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
// the last was answered (or, paced, when it is due), over keep-alive connections (as Slack's are). Reported:
// requests/s, p50/p99 in ms from the request being sent to its 200 (as the client saw
// it, and as the server had it out: srv_) and to the reply, and fsynced store
// transactions per request. direct and mixed are as in
// BenchmarkWebhookTelegram: the route's handler without the network and net/http, and
// every other request so, for what HTTP adds in the same run (http_p50_ms, http_p99_ms).
func BenchmarkWebhookSlack(b *testing.B) {
	b.Run("http", func(b *testing.B) { benchSlackWebhook(b, func(int) bool { return true }) })
	b.Run("direct", func(b *testing.B) { benchSlackWebhook(b, func(int) bool { return false }) })
	b.Run("mixed", func(b *testing.B) { benchSlackWebhook(b, func(n int) bool { return n%2 == 0 }) })
	// paced=R: R mentions/s in all on a schedule instead of the closed loop, as in
	// BenchmarkWebhookTelegram.
	for _, rate := range []int{250, 500} {
		b.Run(fmt.Sprintf("paced=%d", rate), func(b *testing.B) {
			b.Run("http", func(b *testing.B) { benchSlackWebhookAt(b, float64(rate), func(int) bool { return true }) })
			b.Run("mixed", func(b *testing.B) { benchSlackWebhookAt(b, float64(rate), channeltest.Alternate(slackSenders)) })
		})
	}
}

// slackSenders is how many senders the webhook benchmark runs, each with its own channel.
const slackSenders = 20

func benchSlackWebhook(b *testing.B, overHTTP func(n int) bool) {
	benchSlackWebhookAt(b, 0, overHTTP)
}

// benchSlackWebhookAt runs the benchmark at rate mentions/s (paced), or as a closed loop
// when rate is 0.
func benchSlackWebhookAt(b *testing.B, rate float64, overHTTP func(n int) bool) {
	const senders = slackSenders
	replies := channeltest.NewReplies()
	e := newEnv(b, httpMode, func(e *env) {
		e.Log = slog.New(slog.DiscardHandler)
		e.Core.PerSession, e.Core.MaxIterations = false, 0
		e.Model.Echo("re: ")
		e.api.mu.Lock()
		e.api.onPost = func(_ string, text string, at time.Time) { replies.Seen(text, at) }
		e.api.mu.Unlock()
	})
	e.hook.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	events := e.Channel.route(decodeEvents)
	var mu sync.Mutex
	var viaHTTP, server, direct []time.Duration
	trip := func(w, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d from sender %d", n, w)
		ts := e.api.userTS()
		ch := "C0B" + strconv.Itoa(w)
		inner := map[string]any{"type": "app_mention", "user": "U0B" + strconv.Itoa(w), "text": "<@UBOT> " + text, "ts": ts, "channel": ch, "event_ts": ts}
		_, ctype, body := slackRequest("events_api", e.api.eventCallback("Ev"+ts, inner))
		reply := replies.Expect(text)
		start := time.Now()
		now := strconv.FormatInt(start.Unix(), 10)
		req := e.hook.request(EventsPath, ctype, body, now, 0)
		var code int
		var ok, out time.Time
		to := &direct
		if overHTTP(n) {
			req.Header.Set(channeltest.StampHeader, ts)
			resp, err := e.hook.client.Do(req)
			if err != nil {
				return 0, err
			}
			ok, to = time.Now(), &viaHTTP
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
			if out, err = stampOf(e, ts); err != nil {
				return 0, err
			}
		} else {
			sw := channeltest.NewStampWriter()
			events.ServeHTTP(sw, req)
			code, ok = sw.Code, sw.At
		}
		if code != http.StatusOK {
			return 0, fmt.Errorf("event answered %d", code)
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
	for w := range senders { // the first mention of a channel makes its session
		if _, err := trip(w, -1); err != nil {
			b.Fatal(err)
		}
	}
	viaHTTP, server, direct = nil, nil, nil
	fsyncs := e.Store.GroupStats().Durable
	latencies, elapsed := channeltest.Drive(b, senders, rate, trip)
	b.ReportMetric(float64(e.Store.GroupStats().Durable-fsyncs)/float64(b.N), "fsyncs/req")
	channeltest.ReportWebhook(b, elapsed, channeltest.WebhookTimes{HTTP: viaHTTP, Server: server, Direct: direct, Replies: latencies})
}

// stampOf is when the server had the answer to request id out.
func stampOf(e *env, id string) (time.Time, error) {
	at, ok := e.stamps.Take(id)
	if !ok {
		return at, errors.New("the server noted no answer")
	}
	return at, nil
}
