package discord

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
)

// BenchmarkDiscordRoundTrip measures the gateway between Discord and the engine, against
// the fake: a dispatch written to the gateway websocket, received by discordgo, handled by
// the adapter and a real engine on SQLite with an instant model, and the reply's REST call
// arriving at the fake.
//
//   - messages/chats=N: mentions in N channels, each sending its next message when the last
//     was answered. Reported: msgs/s, reply latency p50/p99 (ms), and gateway_p99_ms, the
//     time the adapter holds the gateway goroutine per event.
//   - interactions/agent-busy: /plan status commands in a channel whose agent is in the
//     middle of a turn (its model call does not return). Reported: ack_p99_ms, the time
//     to the interaction callback (Discord allows 3s), and answer_p50/p99_ms, the time to
//     the edit of the deferred response with the status.
func BenchmarkDiscordRoundTrip(b *testing.B) {
	for _, chats := range []int{1, 16} {
		b.Run(fmt.Sprintf("messages/chats=%d", chats), func(b *testing.B) { benchMessages(b, chats) })
	}
	b.Run("interactions/agent-busy", benchInteractions)
}

// benchEnv runs the adapter and an engine (with an echoing model) against a fake with
// channels B0..B15, and keeps the time each handled event held the gateway goroutine.
type benchEnv struct {
	*channeltest.Env[*Channel]
	fd   *fakeDiscord
	gmu  sync.Mutex
	gate []time.Duration
}

// newBenchEnv prepares the env; busy, if not "", is a session whose model calls wait until
// release is closed. The caller starts it.
func newBenchEnv(b *testing.B, busy string, release <-chan struct{}) *benchEnv {
	fd := newFakeDiscord(b)
	for i := range 16 {
		id := fmt.Sprintf("B%d", i)
		fd.channels[id] = fakeChan{ID: id, Guild: "G1"}
	}
	be := &benchEnv{fd: fd}
	be.Env = channeltest.NewEnv(b, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		ch, err := newChannel(ctx, Config{Token: fd.token, APIURL: fd.URL(), GuildIDs: []string{"G1"}}, st, log, testTuning())
		if err == nil {
			ch.gateHook = be.noteGate
		}
		return ch, err
	}, fd.token)
	be.Log = slog.New(slog.DiscardHandler)
	be.Core.PerSession, be.Core.MaxIterations = false, 0
	be.Model.Echo("re: ")
	if busy != "" {
		be.Model.Hold(busy, release)
	}
	return be
}

func (be *benchEnv) start() {
	be.Start()
	be.fd.waitFor("the gateway", be.fd.connected)
}

func (be *benchEnv) noteGate(d time.Duration, handled bool) {
	if handled {
		be.gmu.Lock()
		be.gate = append(be.gate, d)
		be.gmu.Unlock()
	}
}

func (be *benchEnv) resetGate() {
	be.gmu.Lock()
	be.gate = nil
	be.gmu.Unlock()
}

func benchMessages(b *testing.B, chats int) {
	be := newBenchEnv(b, "", nil)
	fd := be.fd
	replies := channeltest.NewReplies()
	fd.mu.Lock()
	fd.onMessage = func(m shownMsg, at time.Time) { replies.Seen(m.Content, at) }
	fd.mu.Unlock()
	be.start()

	roundTrip := func(c, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, c)
		reply := replies.Expect(text)
		id := fd.say(fmt.Sprintf("B%d", c), user{id: fmt.Sprint(5000 + c), name: "bench"}, text, true)
		at, err := reply()
		return at.Sub(fd.sentTime(id)), err
	}
	for c := range chats { // first messages create the sessions and teach the channels
		if _, err := roundTrip(c, -1); err != nil {
			b.Fatal(err)
		}
	}
	be.resetGate()

	latencies, elapsed := channeltest.RoundTrips(b, chats, func(w, n int) (time.Duration, error) {
		return roundTrip(w, n)
	})
	be.gmu.Lock()
	gate := slices.Clone(be.gate)
	be.gmu.Unlock()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(channeltest.Percentile(latencies, 0.50), "p50_ms")
	b.ReportMetric(channeltest.Percentile(latencies, 0.99), "p99_ms")
	b.ReportMetric(channeltest.Percentile(gate, 0.99), "gateway_p99_ms")
}

func benchInteractions(b *testing.B) {
	release := make(chan struct{})
	be := newBenchEnv(b, sid("C1"), release)
	be.start()
	defer close(release) // runs before the env's cleanup, so the turn can end
	fd := be.fd
	var mu sync.Mutex
	acks, answers := map[string]chan time.Time{}, map[string]chan time.Time{}
	notify := func(m map[string]chan time.Time) func(string, time.Time) {
		return func(id string, at time.Time) {
			mu.Lock()
			c := m[id]
			mu.Unlock()
			if c != nil {
				select {
				case c <- at:
				default:
				}
			}
		}
	}
	fd.mu.Lock()
	fd.onAck, fd.onAnswer = notify(acks), notify(answers)
	fd.mu.Unlock()

	// The agent of C1 starts a turn that does not end while the benchmark runs.
	fd.say("C1", alice, "a long task", true)
	fd.waitFor("the busy turn", func() bool { return len(fd.callsMatching(`^POST /api/v9/channels/C1/typing$`)) > 0 })

	var ackLat, answerLat []time.Duration
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		ack, answer := make(chan time.Time, 1), make(chan time.Time, 1)
		fd.mu.Lock()
		id := fd.newIDLocked()
		fd.mu.Unlock()
		mu.Lock()
		acks[id], answers[id] = ack, answer
		mu.Unlock()
		benchCommand(fd, id, "C1", alice, "status")
		timeout := time.After(10 * time.Second)
		var ackAt, answerAt time.Time
		for ackAt.IsZero() || answerAt.IsZero() {
			select {
			case ackAt = <-ack:
			case answerAt = <-answer:
			case <-timeout:
				b.Fatalf("interaction %s: ack %v, answer %v after 10s", id, ackAt, answerAt)
			}
		}
		sent := fd.sentTime(id)
		ackLat = append(ackLat, ackAt.Sub(sent))
		answerLat = append(answerLat, answerAt.Sub(sent))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(channeltest.Percentile(ackLat, 0.99), "ack_p99_ms")
	b.ReportMetric(channeltest.Percentile(answerLat, 0.50), "answer_p50_ms")
	b.ReportMetric(channeltest.Percentile(answerLat, 0.99), "answer_p99_ms")
}

// benchCommand dispatches /plan sub with a chosen interaction id.
func benchCommand(fd *fakeDiscord, id, channel string, u user, sub string) {
	token := "itok-" + id + "-secret"
	fd.mu.Lock()
	fd.ixs[token] = &fakeIx{ID: id, Channel: channel, Guild: "G1"}
	fd.mu.Unlock()
	fd.dispatch("INTERACTION_CREATE", map[string]any{
		"id": id, "application_id": fd.appID, "type": 2, "token": token, "version": 1,
		"channel_id": channel, "guild_id": "G1", "member": map[string]any{"user": u.json()},
		"data": map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{map[string]any{"name": sub, "type": 1}}},
	})
}
