package slack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// BenchmarkSlackRoundTrip measures the gateway between Slack and the agent: the fake
// Socket Mode websocket writes a mention envelope, the adapter acknowledges it, the engine
// (on SQLite, with an instant model) handles it, and the reply's chat.postMessage reaches
// the fake Web API. Each chat sends its next message when the last was answered.
// Reported: msgs/s; ack p50/p99 in ms, from the envelope written to its ack read; reply
// p50/p99 in ms, from the envelope written to the reply arriving.
//
//   - chats=1, chats=16: the whole path; sixteen chats show queueing for the store's
//     single writer.
//   - busy: as chats=16, while another session's agent is stuck in a model call and
//     envelopes for it keep arriving: acks must not wait for it.
//   - no-engine: a handler that answers at once replaces the engine, leaving the adapter's
//     own share (receiving, acking, formatting, posting): the gateway time per message.
//
// Posting is not paced here (Slack's one message a second per channel would measure the
// pacer).
func BenchmarkSlackRoundTrip(b *testing.B) {
	b.Run("chats=1", func(b *testing.B) { benchRoundTrip(b, 1, true, false) })
	b.Run("chats=16", func(b *testing.B) { benchRoundTrip(b, 16, true, false) })
	b.Run("busy", func(b *testing.B) { benchRoundTrip(b, 16, true, true) })
	b.Run("no-engine", func(b *testing.B) { benchRoundTrip(b, 1, false, false) })
}

func benchRoundTrip(b *testing.B, chats int, withEngine, busy bool) {
	api := newFakeSlack(b)
	tune := testTuning()
	tune.postEvery = 0
	cfg := Config{BotToken: api.botToken, AppToken: api.appToken, APIURL: api.URL()}
	e := channeltest.NewEnv(b, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		return newChannel(ctx, cfg, st, log, tune)
	}, api.botToken, api.appToken)
	e.Log = slog.New(slog.DiscardHandler)
	e.Core.PerSession, e.Core.MaxIterations = false, 0
	e.Echo = !withEngine
	busyThread := "1600000000.000001"
	release := make(chan struct{})
	e.Model.Echo("re: ")
	e.Model.Hold(core.Address{Channel: Name, Account: api.team, Chat: "C0BUSY", Thread: busyThread}.SessionID(), release)
	replies := channeltest.NewReplies()
	api.mu.Lock()
	api.onPost = func(_ string, text string, at time.Time) { replies.Seen(text, at) }
	api.mu.Unlock()
	e.Start()
	b.Cleanup(func() { close(release) }) // runs before the env stops, so the busy turn can end

	var envMu sync.Mutex
	var envelopes []string
	roundTrip := func(c, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, c)
		reply := replies.Expect(text)
		s := api.mention(fmt.Sprintf("C%04d", c), fmt.Sprintf("U%04d", c), text, "1700000000.000001")
		envMu.Lock()
		envelopes = append(envelopes, s.Envelope)
		envMu.Unlock()
		at, err := reply()
		api.mu.Lock()
		sent := api.sentAt[s.Envelope]
		api.mu.Unlock()
		return at.Sub(sent), err
	}
	// Warm up every session (first messages create them) before timing.
	for c := range chats {
		if _, err := roundTrip(c, -1); err != nil {
			b.Fatal(err)
		}
	}
	stopBusy := make(chan struct{})
	var busyWG sync.WaitGroup
	if busy {
		api.mention("C0BUSY", "U0BUSY", "think forever", busyThread)
		busyWG.Go(func() {
			for {
				select {
				case <-stopBusy:
					return
				case <-time.After(10 * time.Millisecond):
				}
				s := api.mention("C0BUSY", "U0BUSY", "and more", busyThread)
				envMu.Lock()
				envelopes = append(envelopes, s.Envelope)
				envMu.Unlock()
			}
		})
	}
	envMu.Lock()
	envelopes = envelopes[:0]
	envMu.Unlock()

	latencies, elapsed := channeltest.RoundTrips(b, chats, func(w, n int) (time.Duration, error) {
		return roundTrip(w, n)
	})
	close(stopBusy)
	busyWG.Wait()
	envMu.Lock()
	var acks []time.Duration
	for _, id := range envelopes {
		if d, ok := waitAckLatency(api, id); ok {
			acks = append(acks, d)
		} else {
			b.Fatalf("envelope %s was never acknowledged", id)
		}
	}
	envMu.Unlock()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(channeltest.Percentile(acks, 0.50), "ack_p50_ms")
	b.ReportMetric(channeltest.Percentile(acks, 0.99), "ack_p99_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "reply_p50_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "reply_p99_ms")
}

// waitAckLatency waits briefly for an envelope's ack (the last ones may still be on the
// wire) and returns its latency.
func waitAckLatency(api *fakeSlack, id string) (time.Duration, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if d, ok := api.ackLatency(id); ok {
			return d, true
		}
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(time.Millisecond)
	}
}
