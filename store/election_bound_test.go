package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// fakeTimers is an Elector's After on a fakeClock: a timer fires once Advance has moved the
// clock to its time. Every timer made is reported on armed, after it was registered, so a
// test can wait for a goroutine to arm one before it moves the clock.
type fakeTimers struct {
	clock   *fakeClock
	mu      sync.Mutex
	pending []fakeTimer
	armed   chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeTimers(c *fakeClock) *fakeTimers {
	return &fakeTimers{clock: c, armed: make(chan time.Duration, 64)}
}

func (f *fakeTimers) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	if at := f.clock.Now().Add(d); d <= 0 {
		ch <- at
	} else {
		f.pending = append(f.pending, fakeTimer{at, ch})
	}
	f.mu.Unlock()
	f.armed <- d
	return ch
}

// Advance moves the clock and fires the timers due.
func (f *fakeTimers) Advance(d time.Duration) {
	f.clock.Add(d)
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	left := f.pending[:0]
	for _, t := range f.pending {
		if t.at.After(now) {
			left = append(left, t)
		} else {
			t.ch <- now
		}
	}
	f.pending = left
}

// waitArmed waits for the next timer made and checks its duration.
func (f *fakeTimers) waitArmed(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case d := <-f.armed:
		if d != want {
			t.Fatalf("timer armed for %v, want %v", d, want)
		}
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		t.Fatalf("no timer armed (want one for %v)", want)
	}
}

// hangingLeases is a store whose lease writes, while hang is set, do not answer: each
// reports its context on entered and waits for release (then fails) or for its context.
type hangingLeases struct {
	store.Leases
	hang    atomic.Bool
	entered chan context.Context
	release chan struct{}
}

func (h *hangingLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if !h.hang.Load() {
		return h.Leases.AcquireLease(ctx, name, owner, now, ttl)
	}
	h.entered <- ctx
	select {
	case <-h.release:
		return core.Lease{}, false, errors.New("connection reset")
	case <-ctx.Done():
		return core.Lease{}, false, ctx.Err()
	}
}

func openSQLiteLeases(t *testing.T) *store.Store {
	t.Helper()
	return mustOpen(t, store.DriverSQLite, filepath.Join(t.TempDir(), "plangate.db"))
}

// A leader whose renewal hangs (the database unreachable) has its lead context cancelled
// when its lease ends by its clock, while the campaign is still inside the store call;
// the watcher's timer, re-armed after a renewal, does not stop a leader that renewed. The
// hung call's deadline is the lease's end.
func TestElectionLeaderStepsDownAtLeaseEndWhileRenewalHangs(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	timers := newFakeTimers(clock)
	st := &hangingLeases{Leases: openSQLiteLeases(t), entered: make(chan context.Context, 1), release: make(chan struct{})}
	e := &store.Elector{Name: "poller:telegram:bot", Owner: "host/1/a", St: st, Now: clock.Now, After: timers.After, Expiry: timers.After}
	if leading, err := e.Step(ctx); err != nil || !leading {
		t.Fatalf("first campaign: leading %v, %v", leading, err)
	}
	lctx, cancel, err := e.Lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	timers.waitArmed(t, store.ElectionTTL)

	timers.Advance(store.ElectionEvery) // a renewal: the lease now ends at +20 s
	if leading, err := e.Step(ctx); err != nil || !leading {
		t.Fatalf("renewal: leading %v, %v", leading, err)
	}
	timers.Advance(store.ElectionTTL - store.ElectionEvery) // +15 s: the old end
	timers.waitArmed(t, store.ElectionEvery)                // re-armed for +20 s
	if lctx.Err() != nil {
		t.Fatal("the lead context was cancelled at the end of a lease that had been renewed")
	}

	st.hang.Store(true)
	type result struct {
		leading bool
		err     error
	}
	stepped := make(chan result, 1)
	go func() { l, err := e.Step(ctx); stepped <- result{l, err} }()
	hung := <-st.entered
	deadline, ok := hung.Deadline()
	if !ok {
		t.Fatal("the renewal's store call has no deadline")
	}
	// The deadline is the lease's end, 5 s away by the clock when the call began.
	if left := time.Until(deadline); left > store.ElectionEvery {
		t.Fatalf("the renewal's deadline is %v away, beyond the lease's end %v away", left, store.ElectionEvery)
	}

	timers.Advance(store.ElectionEvery) // +20 s: the lease's end, the renewal still hanging
	select {
	case <-lctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lead context was not cancelled at the lease's end while the renewal hung")
	}
	if e.Leading() {
		t.Fatal("Leading after the lease's end")
	}
	select {
	case r := <-stepped:
		t.Fatalf("the campaign returned %+v before the store answered", r)
	default:
	}
	close(st.release)
	if r := <-stepped; r.leading || r.err == nil {
		t.Fatalf("the hung renewal's campaign: leading %v, err %v; want standing by and an error", r.leading, r.err)
	}
}

// stallingElectionLeases is a store whose lease writes, while stall is set, take that long
// by the test's clock and then fail.
type stallingElectionLeases struct {
	store.Leases
	clock *fakeClock
	stall time.Duration
}

func (s *stallingElectionLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if s.stall > 0 {
		s.clock.Add(s.stall)
		return core.Lease{}, false, errors.New("database stalled")
	}
	return s.Leases.AcquireLease(ctx, name, owner, now, ttl)
}

// A renewal that fails after the lease's end (it began before) does not report leading:
// whether the replica leads is judged by the clock after the store call.
func TestElectionRenewalReturningAfterLeaseEndDoesNotLead(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	st := &stallingElectionLeases{Leases: openSQLiteLeases(t), clock: clock}
	e := &store.Elector{Name: "gateway:discord:bot", Owner: "host/1/a", St: st, Now: clock.Now}
	if leading, err := e.Step(ctx); err != nil || !leading {
		t.Fatalf("first campaign: leading %v, %v", leading, err)
	}
	changed := e.Changed()
	clock.Add(store.ElectionEvery)
	st.stall = store.ElectionTTL // began 10 s before the end, failed 5 s after it
	if leading, err := e.Step(ctx); leading || err == nil {
		t.Fatalf("a renewal failing after the lease's end: leading %v, err %v; want standing by and an error", leading, err)
	}
	if e.Leading() {
		t.Fatal("Leading after a renewal that failed past the lease's end")
	}
	select {
	case <-changed:
	default:
		t.Fatal("stepping down did not signal Changed")
	}
}

// blockedLeases is a store that never answers: each call waits for its context.
type blockedLeases struct{}

func (blockedLeases) AcquireLease(ctx context.Context, _, _ string, _ time.Time, _ time.Duration) (core.Lease, bool, error) {
	<-ctx.Done()
	return core.Lease{}, false, ctx.Err()
}
func (blockedLeases) ReleaseLease(ctx context.Context, _, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// A standby's campaign against a store that does not answer gives up after Every (its
// next campaign is due then) instead of holding Run for ever.
func TestElectionStandbyCampaignIsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	e := &store.Elector{Name: "poller:telegram:bot", Owner: "host/1/a", St: blockedLeases{}, Now: clock.Now,
		Every: 20 * time.Millisecond}
	type result struct {
		leading bool
		err     error
	}
	done := make(chan result, 1)
	go func() { l, err := e.Step(context.Background()); done <- result{l, err} }()
	select {
	case r := <-done:
		if r.leading || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("a hung standby campaign: leading %v, err %v; want standing by and the deadline's error", r.leading, r.err)
		}
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		t.Fatal("a standby's campaign against a store that does not answer did not return")
	}
}
