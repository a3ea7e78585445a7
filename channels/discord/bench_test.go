package discord

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// benchModel answers at once with the last user message, so a reply names its message;
// calls for the busy session wait until release is closed.
type benchModel struct {
	busy    string
	release chan struct{}
}

func (m benchModel) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	if req.SessionID == m.busy {
		select {
		case <-m.release:
		case <-ctx.Done():
			return core.ModelResponse{}, ctx.Err()
		}
	}
	last := ""
	for _, msg := range req.Messages {
		if msg.Role == core.RoleUser {
			last = msg.Content
		}
	}
	return core.ModelResponse{Text: "re: " + last}, nil
}

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

// benchEnv runs the adapter and an engine against a fake with channels B0..B15.
type benchEnv struct {
	fd   *fakeDiscord
	ch   *Channel
	gmu  sync.Mutex
	gate []time.Duration
}

func newBenchEnv(b *testing.B, m core.Model) *benchEnv {
	fd := newFakeDiscord(b)
	for i := range 16 {
		id := fmt.Sprintf("B%d", i)
		fd.channels[id] = fakeChan{ID: id, Guild: "G1"}
	}
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	ch, err := newChannel(context.Background(), Config{Token: fd.token, APIURL: fd.URL(), GuildIDs: []string{"G1"}}, st, log, testTuning())
	if err != nil {
		b.Fatal(err)
	}
	be := &benchEnv{fd: fd, ch: ch}
	ch.gateHook = func(d time.Duration, handled bool) {
		if handled {
			be.gmu.Lock()
			be.gate = append(be.gate, d)
			be.gmu.Unlock()
		}
	}
	eng := core.NewEngine(core.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PlanMode: true},
		core.Deps{Store: st, Model: m, Out: channels.NewHub(log, ch), Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, eng) }()
	b.Cleanup(func() {
		cancel()
		<-done
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		_ = eng.Wait(wctx)
	})
	fd.waitFor("the gateway", fd.connected)
	return be
}

func (be *benchEnv) resetGate() {
	be.gmu.Lock()
	be.gate = nil
	be.gmu.Unlock()
}

func benchMessages(b *testing.B, chats int) {
	be := newBenchEnv(b, benchModel{})
	fd := be.fd
	var mu sync.Mutex
	replies := map[string]chan time.Time{}
	fd.mu.Lock()
	fd.onMessage = func(m shownMsg, at time.Time) {
		key, ok := strings.CutPrefix(m.Content, "re: ")
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
	fd.mu.Unlock()

	roundTrip := func(c, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, c)
		got := make(chan time.Time, 1)
		mu.Lock()
		replies[text] = got
		mu.Unlock()
		id := fd.say(fmt.Sprintf("B%d", c), user{id: fmt.Sprint(5000 + c), name: "bench"}, text, true)
		select {
		case at := <-got:
			return at.Sub(fd.sentTime(id)), nil
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("no reply to %q", text)
		}
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
	be := newBenchEnv(b, benchModel{busy: sid("C1"), release: release})
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
