package slack

import (
	"context"
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

func progress(steps map[string]string) core.ModelResponse { return channeltest.Progress(steps) }

// testTuning keeps Slack's rules but not its patience: no pacing, Retry-After counted in
// tens of milliseconds, short backoff, a fast ping check.
func testTuning() tuning {
	return tuning{
		burst: 1, retryUnit: 10 * time.Millisecond, maxAttempts: 5,
		backoff: 5 * time.Millisecond, maxBackoff: 20 * time.Millisecond, attemptTime: 5 * time.Second,
		pingInterval: 2 * time.Second, seenFor: time.Hour,
	}
}

// env is the adapter against the fake Slack, feeding a real engine on a real store.
type env struct {
	t     *testing.T
	dir   string
	api   *fakeSlack
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
	e := &env{t: t, dir: dir, api: newFakeSlack(t), model: newModel(), logs: &logBuffer{}}
	e.log = newTestLogger(e.logs)
	t.Cleanup(func() { assertNoTokens(t, e.api, e.logs.String()) })
	e.cfg = Config{BotToken: e.api.botToken, AppToken: e.api.appToken, APIURL: e.api.URL()}
	e.core = core.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PerSession: true, MaxIterations: 10, PlanMode: true}
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

// assertNoTokens fails the test if a token appears in text.
func assertNoTokens(t testing.TB, api *fakeSlack, text string) {
	t.Helper()
	for _, tok := range []string{api.botToken, api.appToken, "SECRETbot", "SECRETapp"} {
		if strings.Contains(text, tok) {
			t.Errorf("a token (%s…) appears in the log or error", tok[:6])
		}
	}
}

// start builds the adapter and engine on the env's store and runs them.
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
}

// stop ends Run and waits for the engine to go idle.
func (e *env) stop() {
	e.t.Helper()
	if e.cancel == nil {
		return
	}
	e.model.Unblock()
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

func (e *env) addr(ch, thread string) core.Address {
	return core.Address{Channel: Name, Account: e.api.team, Chat: ch, Thread: thread}
}

func (e *env) sid(ch, thread string) string { return e.addr(ch, thread).SessionID() }

// waitPhase waits until the session of ch/thread is in phase p.
func (e *env) waitPhase(ch, thread string, p core.Phase) core.Session {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := e.st.Session(context.Background(), e.sid(ch, thread))
		if err == nil && s.Phase == p {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s/%s never reached phase %s (now %s); calls: %s", ch, thread, p, s.Phase, e.api.describeCalls())
		}
		time.Sleep(5 * time.Millisecond)
	}
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
