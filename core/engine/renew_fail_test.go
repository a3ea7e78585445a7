package engine_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// failingLeases is the store with lease writes that fail while fail is set.
type failingLeases struct {
	*store.Store
	fail atomic.Bool
}

func (s *failingLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if s.fail.Load() {
		return core.Lease{}, false, errors.New("connection refused")
	}
	return s.Store.AcquireLease(ctx, name, owner, now, ttl)
}

// renewer is an engine whose turn blocks in the model until block is closed (or its
// context ends), with renewals on a fake timer and its log kept.
type renewer struct {
	eng      *engine.Engine
	renewals *fakeTimers
	block    chan struct{}
	entered  chan struct{}
	log      *syncWriter
	release  func()
}

func newRenewer(t *testing.T, h *harness, leases core.Store, model core.Model, m *fakeModel) *renewer {
	t.Helper()
	r := &renewer{renewals: &fakeTimers{}, block: make(chan struct{}), entered: make(chan struct{}, 1),
		log: &syncWriter{w: &bytes.Buffer{}}}
	m.Block(r.block)
	m.Hook(func(core.ModelRequest) { r.entered <- struct{}{} })
	r.eng = engine.NewEngine(h.cfg, engine.Deps{Store: leases, Model: model, Out: h.out, Owner: "renewer",
		Log: slog.New(slog.NewTextHandler(r.log, nil)), Now: func() time.Time { return h.clock }})
	var once sync.Once
	r.release = func() { once.Do(func() { close(r.block) }) }
	t.Cleanup(func() { r.release(); _ = r.eng.Wait(context.Background()) }) // a failure leaves no turn blocked
	engine.SetRenewTimer(r.eng, r.renewals.after)
	return r
}

func (r *renewer) logged() string {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.w.String()
}

// waitDone waits for a turn's end; the guard only keeps a broken build from hanging.
func waitDone(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("the turn did not end: %s", what)
		return nil
	}
}

// A turn whose lease renewals keep failing stops before its lease expires by its clock:
// after the first failure (10 s into a 30 s lease) the retry is due while 20 s remain, so
// it is tried; after the second, 10 s remain, no more than the wait for a third try, so the
// turn stops then rather than run on into the time another process may take the session.
// The model blocks until its context ends, so the turn's end is its cancellation.
func TestLeaseRenewalsFailingStopTheTurnBeforeTheLeaseEnds(t *testing.T) {
	const ttl = 30 * time.Second
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	leases := &failingLeases{Store: h.st}
	m := newFakeModel()
	r := newRenewer(t, h, leases, m, m)
	taken := h.clock
	done := r.eng.Enqueue(context.Background(), evMsg(h, "a", "ev-1", "work"))
	<-r.entered
	leases.fail.Store(true)
	h.clock = h.clock.Add(ttl / 3)
	r.renewals.fireAll(t)
	if len(r.renewals.delays) != 2 || r.renewals.delays[1] != ttl/3 || r.renewals.pending() != 1 {
		t.Fatalf("after a failure with 20 s of the lease left: scheduled %v (%d pending), want a retry after %v",
			r.renewals.delays, r.renewals.pending(), ttl/3)
	}
	h.clock = h.clock.Add(ttl / 3)
	r.renewals.fireAll(t) // fails again, 10 s before the lease's end
	waitDone(t, done, "renewals failed until the lease would end before the next try")
	if !h.clock.Before(taken.Add(ttl)) {
		t.Fatalf("stopped at %v, not before the lease's end %v", h.clock, taken.Add(ttl))
	}
	if n := r.renewals.pending(); n != 0 {
		t.Fatalf("%d renewals scheduled after the turn stopped", n)
	}
	if log := r.logged(); !strings.Contains(log, "could not renew the session lease before it ends; stopping the turn") {
		t.Fatalf("no log line says why the turn stopped:\n%s", log)
	}
	if l, err := h.st.Lease(context.Background(), engine.SessionLease(sessionID("a")), h.clock); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("lease after the stopped turn: %+v, %v; want it released", l, err)
	}
}

// A turn whose renewal fails once and succeeds on the retry, before the lease ends, goes
// on to its answer, with the lease extended from the retry.
func TestLeaseRenewalFailingOnceLetsTheTurnGoOn(t *testing.T) {
	const ttl = 30 * time.Second
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	leases := &failingLeases{Store: h.st}
	m := newFakeModel()
	r := newRenewer(t, h, leases, m, m)
	before := h.out.count()
	done := r.eng.Enqueue(context.Background(), evMsg(h, "a", "ev-1", "work"))
	<-r.entered
	leases.fail.Store(true)
	h.clock = h.clock.Add(ttl / 3)
	r.renewals.fireAll(t)
	leases.fail.Store(false)
	h.clock = h.clock.Add(ttl / 3)
	r.renewals.fireAll(t) // the retry writes, 10 s before the lease's end
	l, err := h.st.Lease(context.Background(), engine.SessionLease(sessionID("a")), h.clock)
	if err != nil || l.Owner != "renewer" || !l.ExpiresAt.Equal(h.clock.Add(ttl)) {
		t.Fatalf("lease after the retry: %+v, %v; want renewer's until %v", l, err, h.clock.Add(ttl))
	}
	if len(r.renewals.delays) != 3 || r.renewals.delays[2] != ttl/3 || r.renewals.pending() != 1 {
		t.Fatalf("after the retry: scheduled %v (%d pending), want the next after %v", r.renewals.delays, r.renewals.pending(), ttl/3)
	}
	r.release()
	if err := waitDone(t, done, "the model was released"); err != nil {
		t.Fatal(err)
	}
	if h.out.count() == before {
		t.Fatal("the turn that renewed on the retry sent no answer")
	}
	if log := r.logged(); strings.Contains(log, "stopping the turn") || !strings.Contains(log, "trying again before it ends") {
		t.Fatalf("log of a renewal that failed once:\n%s", log)
	}
}

// hungLeases is the store with lease writes that, while hang is set, do not answer and
// ignore their context (as a write queued behind SQLite's stuck writer does): each
// reports its context on entered and waits for release.
type hungLeases struct {
	*store.Store
	hang    atomic.Bool
	entered chan context.Context
	release chan struct{}
}

func (s *hungLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if !s.hang.Load() {
		return s.Store.AcquireLease(ctx, name, owner, now, ttl)
	}
	s.entered <- ctx
	<-s.release
	return core.Lease{}, false, errors.New("database stalled")
}

// cancelWatcher is a model that closes cancelled when a call returns with its context
// ended. (A context.AfterFunc stopped on return would race the cancellation: the call
// wakes on Done before the context runs its after-functions.)
type cancelWatcher struct {
	core.Model
	once      sync.Once
	cancelled chan struct{}
}

func (c *cancelWatcher) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	resp, err := c.Model.Complete(ctx, req)
	if ctx.Err() != nil {
		c.once.Do(func() { close(c.cancelled) })
	}
	return resp, err
}

// A renewal write that hangs and ignores its deadline still stops the turn at the lease's
// end: the deadline's hook cancels the turn while the write is stuck, and no retry is
// scheduled once it returns. (The lease here is 60 ms, so that its end comes by the wall
// clock the deadline runs on; nothing is measured.)
func TestLeaseRenewalHungPastTheLeaseEndStopsTheTurn(t *testing.T) {
	const ttl = 60 * time.Millisecond
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	leases := &hungLeases{Store: h.st, entered: make(chan context.Context, 1), release: make(chan struct{})}
	var unhang sync.Once
	unhangAll := func() { unhang.Do(func() { close(leases.release) }) }
	m := newFakeModel()
	model := &cancelWatcher{Model: m, cancelled: make(chan struct{})}
	r := newRenewer(t, h, leases, model, m)
	t.Cleanup(unhangAll) // before the engine's close (cleanups run last first): stop waits for the write
	done := r.eng.Enqueue(context.Background(), evMsg(h, "a", "ev-1", "work"))
	<-r.entered
	leases.hang.Store(true)
	h.clock = h.clock.Add(ttl / 3)
	r.renewals.mu.Lock()
	fire := r.renewals.fns[0]
	r.renewals.stopped[0] = true
	r.renewals.mu.Unlock()
	fired := make(chan struct{})
	go func() { fire(); close(fired) }()
	hung := <-leases.entered
	if _, ok := hung.Deadline(); !ok {
		t.Fatal("the renewal's write has no deadline")
	}
	select {
	case <-model.cancelled:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		t.Fatalf("the turn was not stopped while its renewal hung past the lease's end; log:\n%s", r.logged())
	}
	select {
	case <-fired:
		t.Fatal("the renewal returned before its write did")
	default:
	}
	unhangAll()
	<-fired
	waitDone(t, done, "the hung renewal returned")
	if n := r.renewals.pending(); n != 0 {
		t.Fatalf("%d renewals scheduled after the turn stopped at the lease's end", n)
	}
	if log := r.logged(); !strings.Contains(log, "did not finish by the lease's end; stopping the turn") {
		t.Fatalf("no log line says why the turn stopped:\n%s", log)
	}
}
