package telegram

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
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

// testTuning keeps Telegram's rules but not its patience: no pacing, retry_after counted
// in milliseconds, short backoff.
func testTuning() tuning {
	return tuning{
		burst: 1, retryUnit: 10 * time.Millisecond, maxAttempts: 5,
		backoff: 5 * time.Millisecond, maxBackoff: 20 * time.Millisecond, attemptTime: 5 * time.Second,
		toastWait: 5 * time.Second, holdAfterErr: 5 * time.Millisecond, flushDelay: 20 * time.Millisecond,
	}
}

// env is the adapter against the fake Bot API, feeding a real engine on a real store.
type env struct {
	t     *testing.T
	dir   string
	api   *fakeAPI
	st    *store.Store
	model *model
	logs  *logBuffer
	log   *slog.Logger
	cfg   Config
	core  core.Config

	ch     *Channel
	hub    *channels.Hub
	eng    *core.Engine
	cancel context.CancelFunc
	done   chan error
}

func newEnv(t *testing.T, mutate ...func(*env)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, api: newFakeAPI(t), model: newModel(), logs: &logBuffer{}}
	e.log = newTestLogger(e.logs)
	t.Cleanup(func() {
		if strings.Contains(e.logs.String(), e.api.token) {
			t.Error("the bot token appears in the log")
		}
	})
	e.cfg = Config{Token: e.api.token, APIURL: e.api.URL(), RequireMentionInGroups: true, PollTimeout: time.Second}
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

// start builds a fresh adapter and engine on the env's store and runs them, as a
// (re)started process does.
func (e *env) start() {
	e.t.Helper()
	ch, err := newChannel(context.Background(), e.cfg, e.st, e.log, testTuning())
	if err != nil {
		e.t.Fatal(err)
	}
	e.ch = ch
	e.hub = channels.NewHub(e.log, ch)
	e.eng = core.NewEngine(e.core, core.Deps{Store: e.st, Model: e.model, Out: e.hub, Log: e.log})
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

func (e *env) session(chat int64) core.Session {
	e.t.Helper()
	s, err := e.st.Session(context.Background(), e.addr(chat, 0).SessionID())
	if err != nil {
		e.t.Fatalf("loading session of chat %d: %v", chat, err)
	}
	return s
}

func (e *env) addr(chat int64, thread int) core.Address {
	a := core.Address{Channel: Name, Account: strconv.FormatInt(e.api.botID, 10), Chat: strconv.FormatInt(chat, 10)}
	if thread != 0 {
		a.Thread = strconv.Itoa(thread)
	}
	return a
}

func (e *env) sessionID(chat int64) string { return e.addr(chat, 0).SessionID() }

// waitPhase waits until chat's session is in phase p.
func (e *env) waitPhase(chat int64, p core.Phase) core.Session {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := e.st.Session(context.Background(), e.sessionID(chat))
		if err == nil && s.Phase == p {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("chat %d never reached phase %s (now %s); calls: %s", chat, p, s.Phase, e.api.describeCalls())
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

// waitState waits until the adapter has saved key.
func (e *env) waitState(key string) string {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, ok, err := e.st.ChannelState(context.Background(), Name, strconv.FormatInt(e.api.botID, 10), key)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the adapter never saved %s", key)
		}
		time.Sleep(2 * time.Millisecond)
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
