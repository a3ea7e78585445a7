package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
)

// BenchmarkTelegramRoundTrip measures the gateway between a served update and its reply:
// the fake Bot API serves a message, the adapter receives it, the engine (on SQLite, with
// an instant model) handles it, and the reply's sendMessage reaches the fake. Each chat
// sends its next message when the last was answered: one chat shows the time of a message
// alone, sixteen show how messages queue for the store's single writer. Reported: msgs/s,
// and p50/p99 latency in ms from the update being served (the long-poll wait before it is
// not counted) to the reply arriving.
//
// The no-engine case replaces the engine with a handler that answers at once, which
// leaves the adapter's own share: receiving, the inbox save, formatting and sending.
func BenchmarkTelegramRoundTrip(b *testing.B) {
	for _, chats := range []int{1, 16} {
		b.Run(fmt.Sprintf("chats=%d", chats), func(b *testing.B) { benchRoundTrip(b, chats, true) })
	}
	b.Run("chats=1/no-engine", func(b *testing.B) { benchRoundTrip(b, 1, false) })
}

func benchRoundTrip(b *testing.B, chats int, withEngine bool) {
	api := newFakeAPI(b)
	cfg := Config{Token: api.token, APIURL: api.URL(), PollTimeout: time.Second}
	e := channeltest.NewEnv(b, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		return newChannel(ctx, cfg, st, log, testTuning())
	}, api.token)
	e.Log = slog.New(slog.DiscardHandler)
	e.Core.PerSession, e.Core.MaxIterations = false, 0
	e.Model.Echo("re: ")
	e.Echo = !withEngine
	replies := channeltest.NewReplies()
	api.mu.Lock()
	api.onSent = func(_ int64, text string, at time.Time) { replies.Seen(text, at) }
	api.mu.Unlock()
	e.Start()

	roundTrip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		reply := replies.Expect(text)
		id := api.say(chat, user{id: chat, name: "bench"}, text)
		at, err := reply()
		return at.Sub(api.servedAt(id)), err
	}
	// Warm up every session (first messages create them) before timing.
	for c := range chats {
		if _, err := roundTrip(int64(1000+c), -1); err != nil {
			b.Fatal(err)
		}
	}

	latencies, elapsed := channeltest.RoundTrips(b, chats, func(w, n int) (time.Duration, error) {
		return roundTrip(int64(1000+w), n)
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "p50_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "p99_ms")
}
