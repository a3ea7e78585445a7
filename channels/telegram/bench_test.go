package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// spacedGap is the idle time between two messages of a spaced or sparse run. spaced
// models one message a second: the inbox's flushDelay is scaled from the real one as one
// second is to spacedGap (10 s becomes 250 ms), so the lazy save after handling runs as
// often per message as at one message a second. sparse keeps the test tuning's 20 ms, less
// than the gap: every message comes after more idleness than the delay and pays that save
// of its own, as at one message every 12 s or more with the real 10 s (and as spaced did
// while the real delay was 100 ms).
const spacedGap = 25 * time.Millisecond

// spacedFlushDelay is the real flushDelay scaled as one second is to spacedGap.
func spacedFlushDelay() time.Duration { return defaultTuning().flushDelay * spacedGap / time.Second }

// BenchmarkTelegramRoundTrip measures the gateway between a served update and its reply:
// the fake Bot API serves a message, the adapter receives it, the engine (on SQLite, with
// an instant model) handles it, and the reply's sendMessage reaches the fake. Pacing is
// lifted (testTuning's rates are zero: no limit).
//
// saturated: each chat sends its next message when the last was answered, so messages
// queue for the store's single writer. spaced and sparse: one message at a time,
// round-robin over the chats, with spacedGap of idleness after each reply (see spacedGap
// for what each models). chats=1 is one conversation, chats=20 twenty sessions.
//
// Reported: msgs/s (saturated only: a spaced run's time is mostly the gaps); p50/p99 ms
// from the update being served (the long-poll wait before it is not counted) to the
// reply arriving; own-p50/own-p99, the same less the fake model's time (ModelTime);
// cpu-ms/msg and disk-KB/msg of the whole test process (the fake API and the benchmark
// driver included); syncs/msg, the store's durable (fsynced) transactions per message;
// txs/msg and writes/msg, its transactions and the writes they carried per message;
// sync-waits/msg, the durable writes that waited for an fsync (several share one);
// writes/batch, the store writes that shared one transaction; after-model-p50/p99, from
// the model being asked to the reply arriving, less the model's time (the issue's "model
// answered → reply sent").
//
// The no-engine case replaces the engine with a handler that answers at once, which
// leaves the adapter's own share: receiving, the inbox save, formatting and sending.
func BenchmarkTelegramRoundTrip(b *testing.B) {
	for _, mode := range []string{"saturated", "spaced", "sparse"} {
		for _, chats := range []int{1, 20} {
			b.Run(fmt.Sprintf("%s/chats=%d", mode, chats), func(b *testing.B) {
				benchRoundTrip(b, benchCase{chats: chats, spaced: mode != "saturated", sparse: mode == "sparse", engine: true})
			})
		}
	}
	b.Run("saturated/chats=1/no-engine", func(b *testing.B) { benchRoundTrip(b, benchCase{chats: 1}) })
}

// BenchmarkTelegramThroughput is twenty chats sending as fast as they are answered with
// pacing lifted: the messages per second the gateway sustains on this machine.
// transport=pooled is the adapter's own HTTP transport, transport=default net/http's
// (two idle connections per host), for the same-run comparison; dials/msg counts the
// connections opened to the Bot API.
func BenchmarkTelegramThroughput(b *testing.B) {
	b.Run("transport=pooled", func(b *testing.B) {
		benchRoundTrip(b, benchCase{chats: 20, engine: true, transport: newTransport()})
	})
	b.Run("transport=default", func(b *testing.B) {
		benchRoundTrip(b, benchCase{chats: 20, engine: true, transport: http.DefaultTransport.(*http.Transport).Clone()})
	})
}

// benchCase is one configuration of the round-trip benchmark.
type benchCase struct {
	chats     int
	spaced    bool            // one message at a time with gaps, rather than saturated
	sparse    bool            // with gaps longer than the inbox's flushDelay (see spacedGap)
	engine    bool            // the real engine, rather than an echo handler
	transport *http.Transport // nil: the adapter's default client
}

func benchRoundTrip(b *testing.B, bc benchCase) {
	chats, spaced, withEngine := bc.chats, bc.spaced, bc.engine
	api := newFakeAPI(b)
	cfg := Config{Token: api.token, APIURL: api.URL(), PollTimeout: time.Second}
	var dials atomic.Int64
	if tr := bc.transport; tr != nil {
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dial(ctx, network, addr)
		}
		cfg.HTTPClient = &http.Client{Transport: tr}
		b.Cleanup(tr.CloseIdleConnections)
	}
	tune := testTuning()
	if spaced && !bc.sparse {
		tune.flushDelay = spacedFlushDelay()
	}
	e := channeltest.NewEnv(b, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		return newChannel(ctx, cfg, st, log, tune)
	}, api.token)
	e.Log = slog.New(slog.DiscardHandler)
	e.Core.PerSession, e.Core.MaxIterations = false, 0
	e.Core.TypingDelay = core.DefaultTypingDelay // as the gateway runs: an instant model needs no indicator
	e.Model.Echo("re: ")
	e.Echo = !withEngine
	replies := channeltest.NewReplies()
	asked := channeltest.RecordModelCalls(e.Model)
	api.mu.Lock()
	api.onSent = func(_ int64, text string, at time.Time) { replies.Seen(text, at) }
	api.mu.Unlock()
	e.Start()

	var (
		afterMu    sync.Mutex
		afterModel []time.Duration // reply arrival less the model call's start
	)
	roundTrip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		reply := replies.Expect(text)
		id := api.say(chat, user{id: chat, name: "bench"}, text)
		at, err := reply()
		if called := asked.At(text); err == nil && !called.IsZero() {
			afterMu.Lock()
			afterModel = append(afterModel, at.Sub(called))
			afterMu.Unlock()
		}
		return at.Sub(api.servedAt(id)), err
	}
	// Warm up every session (first messages create them) before timing.
	for c := range chats {
		if _, err := roundTrip(int64(1000+c), -1); err != nil {
			b.Fatal(err)
		}
	}
	var model time.Duration
	if withEngine {
		model = channeltest.ModelTime(e.Model)
	}

	trip := func(w, n int) (time.Duration, error) { return roundTrip(int64(1000+w), n) }
	afterMu.Lock()
	afterModel = nil // not the warm-up's
	afterMu.Unlock()
	st0, use0, dials0 := e.Store.GroupStats(), channeltest.ReadUsage(), dials.Load()
	var latencies []time.Duration
	if spaced {
		latencies = channeltest.SpacedTrips(b, chats, spacedGap, trip)
	} else {
		var elapsed time.Duration
		latencies, elapsed = channeltest.RoundTrips(b, chats, trip)
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	}
	channeltest.ReportUsage(b, use0, b.N)
	if bc.transport != nil {
		b.ReportMetric(float64(dials.Load()-dials0)/float64(b.N), "dials/msg")
	}
	st := e.Store.GroupStats()
	b.ReportMetric(float64(st.Durable-st0.Durable)/float64(b.N), "syncs/msg")
	b.ReportMetric(float64(st.Batches-st0.Batches)/float64(b.N), "txs/msg")
	b.ReportMetric(float64(st.Writes-st0.Writes)/float64(b.N), "writes/msg")
	b.ReportMetric(float64(st.Waited-st0.Waited)/float64(b.N), "sync-waits/msg")
	if st.Batches > st0.Batches {
		b.ReportMetric(float64(st.Writes-st0.Writes)/float64(st.Batches-st0.Batches), "writes/batch")
	}
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "p50_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "p99_ms")
	own := channeltest.Less(latencies, model)
	b.ReportMetric(channeltest.Percentile(own, 0.50), "own-p50_ms")
	b.ReportMetric(channeltest.Percentile(own, 0.99), "own-p99_ms")
	if withEngine {
		after := channeltest.Less(afterModel, model)
		b.ReportMetric(channeltest.Percentile(after, 0.50), "after-model-p50_ms")
		b.ReportMetric(channeltest.Percentile(after, 0.99), "after-model-p99_ms")
	}
}
