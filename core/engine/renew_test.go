package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// A turn's lease is renewed by a timer ttl/3 after it was taken and again ttl/3 after each
// renewal, and not after the turn ended: the pending timer is stopped, and one that fires
// late writes nothing. A turn that ends before ttl/3 schedules one timer and runs nothing.
func TestLeaseRenewedByTimerUntilTheTurnEnds(t *testing.T) {
	const ttl = 30 * time.Second
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	m, entered, block := newFakeModel(), make(chan struct{}, 1), make(chan struct{})
	m.Block(block)
	m.Hook(func(core.ModelRequest) { entered <- struct{}{} })
	eng := engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: m, Out: h.out, Owner: "renewer",
		Now: func() time.Time { return h.clock }})
	t.Cleanup(func() { _ = eng.Wait(context.Background()) })
	renewals := &fakeTimers{}
	engine.SetRenewTimer(eng, renewals.after)
	ctx := context.Background()
	name := engine.SessionLease(sessionID("a"))
	expiry := func() time.Time {
		t.Helper()
		l, err := h.st.Lease(ctx, name, h.clock)
		if err != nil || l.Owner != "renewer" {
			t.Fatalf("lease: %+v, %v", l, err)
		}
		return l.ExpiresAt
	}

	done := eng.Enqueue(ctx, evMsg(h, "a", "ev-1", "work"))
	<-entered
	taken := expiry()
	if len(renewals.delays) != 1 || renewals.delays[0] != ttl/3 || renewals.pending() != 1 {
		t.Fatalf("renewals scheduled %v (%d pending), want one after %v", renewals.delays, renewals.pending(), ttl/3)
	}
	for i := 1; i <= 2; i++ { // a long turn: each renewal writes and schedules the next
		h.clock = h.clock.Add(ttl / 3)
		renewals.fireAll(t)
		if got, want := expiry(), h.clock.Add(ttl); !got.Equal(want) {
			t.Fatalf("renewal %d: lease until %v, want %v (taken until %v)", i, got, want, taken)
		}
		if len(renewals.delays) != i+1 || renewals.delays[i] != ttl/3 || renewals.pending() != 1 {
			t.Fatalf("after renewal %d: scheduled %v (%d pending)", i, renewals.delays, renewals.pending())
		}
	}
	stale := renewals.fns[len(renewals.fns)-1]
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if renewals.pending() != 0 {
		t.Fatal("a renewal is still scheduled after the turn ended")
	}
	released := func(when string) {
		t.Helper()
		if l, err := h.st.Lease(ctx, name, h.clock); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("lease %s: %+v, %v; want it released", when, l, err)
		}
	}
	released("after the turn")
	h.clock = h.clock.Add(ttl / 3)
	stale() // the timer firing just after the turn ended
	released("after a late timer")

	// A short turn: its one timer is stopped before it fires.
	m.Block(nil)
	before := len(renewals.delays)
	if err := <-eng.Enqueue(ctx, evMsg(h, "a", "ev-2", "more")); err != nil {
		t.Fatal(err)
	}
	<-entered
	if n := len(renewals.delays) - before; n != 1 || renewals.pending() != 0 {
		t.Fatalf("short turn: %d renewals scheduled, %d still pending; want one, stopped", n, renewals.pending())
	}
	released("after the short turn")
}

// stallingLeases is the store with a renewal that stalls: while stall is set, a lease
// write advances the test's clock by it (the database hung that long) and fails.
type stallingLeases struct {
	*store.Store
	clock *time.Time
	stall time.Duration
}

func (s *stallingLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if s.stall > 0 {
		*s.clock = s.clock.Add(s.stall)
		return core.Lease{}, false, errors.New("database stalled")
	}
	return s.Store.AcquireLease(ctx, name, owner, now, ttl)
}

// A renewal whose write stalls and fails is tried again ttl/3 after it began, not ttl/3
// after the stall: the retry must come before the lease it could not extend expires, as
// a ticker's would.
func TestLeaseRenewalRetriedOnScheduleAfterASlowFailure(t *testing.T) {
	const ttl, stall = 30 * time.Second, 7 * time.Second
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	leases := &stallingLeases{Store: h.st, clock: &h.clock}
	m, entered, block := newFakeModel(), make(chan struct{}, 1), make(chan struct{})
	m.Block(block)
	m.Hook(func(core.ModelRequest) { entered <- struct{}{} })
	eng := engine.NewEngine(h.cfg, engine.Deps{Store: leases, Model: m, Out: h.out, Owner: "renewer",
		Now: func() time.Time { return h.clock }})
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(block) }) }
	t.Cleanup(func() { release(); _ = eng.Wait(context.Background()) }) // a failure leaves no turn blocked
	renewals := &fakeTimers{}
	engine.SetRenewTimer(eng, renewals.after)

	done := eng.Enqueue(context.Background(), evMsg(h, "a", "ev-1", "work"))
	<-entered
	leases.stall = stall
	h.clock = h.clock.Add(ttl / 3)
	renewals.fireAll(t) // fails after 7 s
	if len(renewals.delays) != 2 || renewals.delays[1] != ttl/3-stall {
		t.Fatalf("after a failed renewal that took %v: scheduled %v, want the retry after %v", stall, renewals.delays, ttl/3-stall)
	}
	leases.stall = 0
	h.clock = h.clock.Add(ttl/3 - stall)
	renewals.fireAll(t) // the retry writes, 2/3 ttl after the lease was taken
	l, err := h.st.Lease(context.Background(), engine.SessionLease(sessionID("a")), h.clock)
	if err != nil || l.Owner != "renewer" || !l.ExpiresAt.Equal(h.clock.Add(ttl)) {
		t.Fatalf("lease after the retry: %+v, %v; want renewer's until %v", l, err, h.clock.Add(ttl))
	}
	if len(renewals.delays) != 3 || renewals.delays[2] != ttl/3 {
		t.Fatalf("after the retry: scheduled %v, want the next after %v", renewals.delays, ttl/3)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// fakeTimers is a fake time.AfterFunc for lease renewals: the test fires them itself.
type fakeTimers struct {
	mu      sync.Mutex
	delays  []time.Duration
	fns     []func()
	stopped []bool
}

func (s *fakeTimers) after(d time.Duration, f func()) func() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.fns)
	s.delays, s.fns, s.stopped = append(s.delays, d), append(s.fns, f), append(s.stopped, false)
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		was := !s.stopped[i]
		s.stopped[i] = true
		return was
	}
}

// pending is how many timers are scheduled and neither stopped nor fired.
func (s *fakeTimers) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.stopped {
		if !st {
			n++
		}
	}
	return n
}

// fireAll fires every pending timer.
func (s *fakeTimers) fireAll(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	var due []func()
	for i, f := range s.fns {
		if !s.stopped[i] {
			s.stopped[i] = true
			due = append(due, f)
		}
	}
	s.mu.Unlock()
	if len(due) == 0 {
		t.Fatal("no timer pending")
	}
	for _, f := range due {
		f()
	}
}
