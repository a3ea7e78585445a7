package channeltest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// patience bounds every wait of an Env; a local fake answers far sooner.
const patience = 10 * time.Second

// Open builds the adapter under test on st, logging to log, as its New does.
type Open[C channels.Channel] func(ctx context.Context, st channels.State, log *slog.Logger) (C, error)

// Env is an adapter under test wired as `plangate serve` wires it: on a real store in
// the test's temporary directory, feeding a real engine that answers with the scripted
// Model, replies going back through a Hub. Everything it logs is kept in Logs, which must
// not contain any of the secrets when the test ends.
//
// NewEnv prepares it; the test may then change Core (and its own adapter config) before
// Start. The adapter's platform fake is the test's own: it differs per platform.
type Env[C channels.Channel] struct {
	TB    testing.TB
	Dir   string
	Store *store.Store
	Model *Model
	Logs  *LogBuffer
	Log   *slog.Logger // set before Start to log elsewhere (benchmarks discard)
	Core  engine.Config
	// Echo makes Run feed an EchoHandler instead of the engine, which leaves the
	// adapter's own share of a round trip to measure.
	Echo bool
	// Now is the engine's clock (nil = time.Now), for tests that step time.
	Now func() time.Time
	// Describe, when set, says what the platform fake saw, for the message of a wait
	// that timed out.
	Describe func() string
	// EngineStore, when set, is the store the engine uses, given the env's (a wrapper
	// that fails some calls, say); After is the engine's Deps.After.
	EngineStore func(*store.Store) core.Store
	After       func(time.Duration) <-chan time.Time

	Channel C
	Hub     *channels.Hub
	Engine  *engine.Engine

	open   Open[C]
	cancel context.CancelFunc
	done   chan error
}

// NewEnv opens a store in a temporary directory and prepares the engine's config (plan
// mode, a workspace per session). secrets are what must never appear in the log.
func NewEnv[C channels.Channel](tb testing.TB, open Open[C], secrets ...string) *Env[C] {
	tb.Helper()
	dir := tb.TempDir()
	e := &Env[C]{TB: tb, Dir: dir, Model: NewModel(), Logs: &LogBuffer{}, open: open}
	e.Log = NewLogger(e.Logs)
	e.Core = engine.Config{
		PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, MaxIterations: 10, PlanMode: true,
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		tb.Fatal(err)
	}
	e.Store = st
	tb.Cleanup(func() {
		st.Close()
		logs := e.Logs.String()
		for _, s := range secrets {
			if s != "" && strings.Contains(logs, s) {
				tb.Errorf("a secret (%.6s…) appears in the log", s)
			}
		}
		if tb.Failed() {
			tb.Logf("adapter log:\n%s", logs)
		}
	})
	return e
}

// Start builds a fresh adapter, hub and engine on the env's store and runs the adapter,
// as a (re)started process does. The test's end stops them.
func (e *Env[C]) Start() {
	e.TB.Helper()
	ch, err := e.open(context.Background(), e.Store, e.Log)
	if err != nil {
		e.TB.Fatal(err)
	}
	e.Channel = ch
	e.Hub = channels.NewHub(e.Log, ch)
	var st core.Store = e.Store
	if e.EngineStore != nil {
		st = e.EngineStore(e.Store)
	}
	e.Engine = engine.NewEngine(e.Core, engine.Deps{Store: st, Model: e.Model, Out: e.Hub, Log: e.Log, After: e.After, Now: e.Now})
	var h channels.Handler = e.Engine
	if e.Echo {
		h = EchoHandler{Out: e.Hub}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- ch.Run(ctx, h) }()
	e.TB.Cleanup(e.Stop)
}

// Stop ends Run (releasing a blocked model first) and waits for the engine to go idle, as
// a shutdown does.
func (e *Env[C]) Stop() {
	e.TB.Helper()
	if e.cancel == nil {
		return
	}
	e.Model.Unblock()
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.done:
		if err != nil {
			e.TB.Errorf("Run returned %v", err)
		}
	case <-time.After(patience):
		e.TB.Error("Run did not return after its context ended")
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := e.Engine.Wait(ctx); err != nil {
		e.TB.Errorf("engine did not go idle: %v", err)
	}
}

// Idle waits until the engine has nothing queued or running.
func (e *Env[C]) Idle() {
	e.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := e.Engine.Wait(ctx); err != nil {
		e.TB.Fatalf("engine never went idle: %v", err)
	}
}

// Eventually waits until cond holds, failing the test (with what) after a while.
func (e *Env[C]) Eventually(what string, cond func() bool) {
	e.TB.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			msg := "never saw " + what
			if e.Describe != nil {
				msg += "; the platform saw: " + e.Describe()
			}
			e.TB.Fatal(msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// WaitPhase waits until the session is in phase p and returns it.
func (e *Env[C]) WaitPhase(session string, p core.Phase) core.Session {
	e.TB.Helper()
	var s core.Session
	e.Eventually(fmt.Sprintf("session %s in phase %s", session, p), func() bool {
		var err error
		s, err = e.Store.Session(context.Background(), session)
		return err == nil && s.Phase == p
	})
	return s
}

// WaitState waits until the adapter has saved key for account and returns its value.
func (e *Env[C]) WaitState(account, key string) string {
	e.TB.Helper()
	var v string
	e.Eventually("the adapter's state "+key, func() bool {
		var ok bool
		var err error
		v, ok, err = e.Store.ChannelState(context.Background(), e.Channel.Name(), account, key)
		if err != nil {
			e.TB.Fatal(err)
		}
		return ok
	})
	return v
}

// Crash ends Run as a killed process does: the engine is left as it is, turns and all.
// Start then plays the restarted process.
func (e *Env[C]) Crash() {
	e.TB.Helper()
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case <-e.done:
	case <-time.After(patience):
		e.TB.Error("Run did not return after its context ended")
	}
}

// Session loads a session, failing the test when it cannot.
func (e *Env[C]) Session(id string) core.Session {
	e.TB.Helper()
	s, err := e.Store.Session(context.Background(), id)
	if err != nil {
		e.TB.Fatalf("loading session %s: %v", id, err)
	}
	return s
}

// StreamIn has the engine show answers as drafts (engine.Config.Stream) and the model
// hand each answer's text out in n pieces, step apart by the engine's clock (a fake
// started at a fixed time). Call it before Start.
func (e *Env[C]) StreamIn(n int, step time.Duration) {
	clock := coretest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	e.Core.Stream = true
	e.Now = clock.Now
	e.Model.StreamIn(n, func() { clock.Add(step) })
}
