package discord

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

// The scripted model, log buffer and model answers are shared by every adapter's tests.
type (
	model     = channeltest.Model
	logBuffer = channeltest.LogBuffer
)

func newModel() *model                                  { return channeltest.NewModel() }
func newTestLogger(w *logBuffer) *slog.Logger           { return channeltest.NewLogger(w) }
func toolCall(name string, args any) core.ModelResponse { return channeltest.ToolCall(name, args) }
func proposal(title string, steps ...string) core.ModelResponse {
	return channeltest.Proposal(title, steps...)
}

// testTuning keeps Discord's rules but not its patience.
func testTuning() tuning {
	return tuning{
		maxAttempts: 3, backoff: 5 * time.Millisecond, maxBackoff: 20 * time.Millisecond,
		attemptTime: 5 * time.Second, ackTime: 2500 * time.Millisecond, ackWait: 5 * time.Second,
		reconnectMin: 10 * time.Millisecond, reconnectMax: 50 * time.Millisecond,
	}
}

func progress(step, status string) core.ModelResponse {
	return toolCall("update_plan", map[string]any{"plan": []map[string]any{{"step": step, "status": status}}, "merge": true})
}

var (
	alice = user{id: "111", name: "alice"} // the approver
	bob   = user{id: "222", name: "bob"}
)

// env is the adapter against the fake Discord, feeding a real engine on a real store.
type env struct {
	t     *testing.T
	dir   string
	fd    *fakeDiscord
	st    *store.Store
	model *model
	logs  *logBuffer
	log   *slog.Logger
	cfg   Config
	core  core.Config

	ch     *Channel
	eng    *core.Engine
	cancel context.CancelFunc
	done   chan error
}

func newEnv(t *testing.T, mutate ...func(*env)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, fd: newFakeDiscord(t), model: newModel(), logs: &logBuffer{}}
	e.log = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if l := e.logs.String(); strings.Contains(l, e.fd.token) || strings.Contains(l, "-secret") {
			t.Error("a token appears in the log")
		}
		if t.Failed() {
			t.Logf("adapter log:\n%s", e.logs.String())
		}
	})
	e.cfg = Config{Token: e.fd.token, APIURL: e.fd.URL(), GuildIDs: []string{"G1"}}
	e.core = core.Config{
		PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PerSession: true,
		MaxIterations: 10, PlanMode: true, Approvers: []string{"discord:" + alice.id},
	}
	for _, m := range mutate {
		m(e)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.start()
	return e
}

// start builds a fresh adapter and engine on the env's store and runs them.
func (e *env) start() {
	e.t.Helper()
	ch, err := newChannel(context.Background(), e.cfg, e.st, e.log, testTuning())
	if err != nil {
		e.t.Fatal(err)
	}
	e.ch = ch
	e.eng = core.NewEngine(e.core, core.Deps{Store: e.st, Model: e.model, Out: channels.NewHub(e.log, ch), Log: e.log})
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- ch.Run(ctx, e.eng) }()
	e.t.Cleanup(e.stop)
	e.fd.waitFor("the gateway session", e.fd.connected)
}

// stop ends Run and waits for the engine to go idle.
func (e *env) stop() {
	e.t.Helper()
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.done:
		if err != nil {
			e.t.Errorf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		e.t.Error("Run did not return after its context ended")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.eng.Wait(ctx); err != nil {
		e.t.Errorf("engine did not go idle: %v", err)
	}
}

func addr(chat, thread string) core.Address {
	a := core.Address{Channel: Name, Chat: chat, Thread: thread}
	if chat != "D1" {
		a.Account = "G1"
	}
	return a
}

func sid(chat string) string { return addr(chat, "").SessionID() }

// waitPhase waits until the session of chat is in phase p.
func (e *env) waitPhase(chat string, p core.Phase) core.Session {
	e.t.Helper()
	var s core.Session
	e.fd.waitFor(fmt.Sprintf("phase %s in %s", p, chat), func() bool {
		var err error
		s, err = e.st.Session(context.Background(), sid(chat))
		return err == nil && s.Phase == p
	})
	return s
}

// idle waits until the engine has nothing queued or running.
func (e *env) idle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.eng.Wait(ctx); err != nil {
		e.t.Fatalf("engine never went idle: %v", err)
	}
}

// waitPlan waits for a message with a file matching pattern in channel.
func (e *env) waitPlan(channel, file string) shownMsg {
	e.t.Helper()
	var found shownMsg
	e.fd.waitFor("a message with "+file, func() bool {
		for _, m := range e.fd.shown(channel) {
			for _, f := range m.Files {
				if strings.Contains(f.Name, file) {
					found = m
					return true
				}
			}
		}
		return false
	})
	return found
}

// waitCallback waits for the callback of interaction id.
func (e *env) waitCallback(id string) callback {
	e.t.Helper()
	var cb callback
	e.fd.waitFor("the callback of interaction "+id, func() bool {
		cbs := e.fd.callbacksOf(id)
		if len(cbs) > 0 {
			cb = cbs[0]
		}
		return len(cbs) > 0
	})
	return cb
}

// followups returns the webhook messages of interaction id.
func (e *env) followups(id string) []shownMsg {
	var out []shownMsg
	for _, m := range e.fd.all() {
		if m.Interaction == id {
			out = append(out, m)
		}
	}
	return out
}

// memState is an in-memory State.
type memState struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memState) ChannelState(_ context.Context, ch, acc, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[ch+"/"+acc+"/"+key]
	return v, ok, nil
}

func (s *memState) SetChannelState(_ context.Context, ch, acc, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[ch+"/"+acc+"/"+key] = value
	return nil
}
