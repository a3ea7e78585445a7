package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// echoModel answers at once with the last user message, so a reply names its update.
type echoModel struct{}

func (echoModel) Complete(_ context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	last := ""
	for _, m := range req.Messages {
		if m.Role == core.RoleUser {
			last = m.Content
		}
	}
	return core.ModelResponse{Text: "re: " + last}, nil
}

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

// echoHandler answers every message at once through the channel, without an engine.
type echoHandler struct{ ch *Channel }

func (h echoHandler) Handle(ctx context.Context, m core.Message) error {
	_, err := h.ch.Send(ctx, core.Reply{To: m.Address, Text: "re: " + m.Text})
	return err
}

func (h echoHandler) Enqueue(ctx context.Context, m core.Message) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Handle(ctx, m) }()
	return done
}

func benchRoundTrip(b *testing.B, chats int, withEngine bool) {
	api := newFakeAPI(b)
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	cfg := Config{Token: api.token, APIURL: api.URL(), PollTimeout: time.Second}
	ch, err := newChannel(context.Background(), cfg, st, log, testTuning())
	if err != nil {
		b.Fatal(err)
	}
	eng := core.NewEngine(core.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PlanMode: true},
		core.Deps{Store: st, Model: echoModel{}, Out: channels.NewHub(log, ch), Log: log})
	var h channels.Handler = echoHandler{ch}
	if withEngine {
		h = eng
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ch.Run(ctx, h) }()
	defer func() {
		cancel()
		<-runDone
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		_ = eng.Wait(wctx)
	}()

	var mu sync.Mutex
	replies := map[string]chan time.Time{} // by message text
	api.mu.Lock()
	api.onSent = func(_ int64, text string, at time.Time) {
		key, ok := strings.CutPrefix(text, "re: ")
		if !ok {
			return
		}
		mu.Lock()
		r := replies[key]
		mu.Unlock()
		if r != nil {
			r <- at
		}
	}
	api.mu.Unlock()

	roundTrip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		got := make(chan time.Time, 1)
		mu.Lock()
		replies[text] = got
		mu.Unlock()
		id := api.say(chat, user{id: chat, name: "bench"}, text)
		select {
		case at := <-got:
			return at.Sub(api.servedAt(id)), nil
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("no reply to %q", text)
		}
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
