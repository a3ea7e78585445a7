package core_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// A session's lease is kept for a short linger after a turn: the next turn reuses it
// without a store write, and the release and the look for work left run when it ends.

// countingLeases is the store with its lease acquires and releases counted.
type countingLeases struct {
	*store.Store
	mu                 sync.Mutex
	acquires, releases int
}

func (c *countingLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	c.mu.Lock()
	c.acquires++
	c.mu.Unlock()
	return c.Store.AcquireLease(ctx, name, owner, now, ttl)
}

func (c *countingLeases) ReleaseLease(ctx context.Context, name, owner string) error {
	c.mu.Lock()
	c.releases++
	c.mu.Unlock()
	return c.Store.ReleaseLease(ctx, name, owner)
}

func (c *countingLeases) counts() (acquires, releases int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acquires, c.releases
}

// lingerTimers is a fake time.AfterFunc for the linger: the test ends lingers itself.
type lingerTimers struct {
	mu      sync.Mutex
	delays  []time.Duration
	fns     []func()
	stopped []bool
}

func (s *lingerTimers) after(d time.Duration, f func()) func() bool {
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

// pending is how many lingers are scheduled and neither stopped nor ended.
func (s *lingerTimers) pending() int {
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

// fireAll ends every pending linger, as their timers would.
func (s *lingerTimers) fireAll(t *testing.T) {
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
		t.Fatal("no linger pending")
	}
	for _, f := range due {
		f()
	}
}

// lingerer is one process whose engine keeps leases for a second after a turn.
type lingerer struct {
	eng    *core.Engine
	st     *countingLeases
	timers *lingerTimers
	model  *fakeModel
	out    *recorder
}

func newLingerer(t *testing.T, h *harness, owner string) *lingerer {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := h.cfg
	cfg.LeaseLinger = core.DefaultLeaseLinger
	p := &lingerer{st: &countingLeases{Store: st}, timers: &lingerTimers{}, model: newFakeModel(), out: &recorder{}}
	p.eng = core.NewEngine(cfg, core.Deps{Store: p.st, Model: p.model, Out: p.out, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return h.clock }, Owner: owner})
	core.SetLingerTimer(p.eng, p.timers.after)
	t.Cleanup(func() { _ = p.eng.Close(context.Background()) })
	return p
}

func (p *lingerer) say(t *testing.T, h *harness, id, text string) {
	t.Helper()
	if err := p.eng.Handle(context.Background(), evMsg(h, "a", id, text)); err != nil {
		t.Fatal(err)
	}
}

// endLingers ends p's pending lingers and waits for what they start.
func (p *lingerer) endLingers(t *testing.T) {
	t.Helper()
	p.timers.fireAll(t)
	if err := p.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// leaseOf is the session's lease as stored (ok false: none).
func leaseOf(t *testing.T, h *harness, chat string) (core.Lease, bool) {
	t.Helper()
	l, err := h.st.Lease(context.Background(), core.SessionLease(sessionID(chat)))
	if errors.Is(err, core.ErrNotFound) {
		return core.Lease{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

// Two turns of one session within the linger take the lease once and release it once,
// after the linger; then the lease row is gone.
func TestLingeringLeaseServesTheNextTurn(t *testing.T) {
	h := newHarness(t)
	p := newLingerer(t, h, "test-lingerer")
	p.say(t, h, "ev-1", "one")
	if a, r := p.st.counts(); a != 1 || r != 0 {
		t.Fatalf("after the first turn: %d acquires, %d releases; want 1, 0 (the lease lingers)", a, r)
	}
	if l, ok := leaseOf(t, h, "a"); !ok || l.Owner != "test-lingerer" {
		t.Fatalf("lease while lingering: %+v, %v", l, ok)
	}
	if got := p.timers.delays; len(got) != 1 || got[0] != core.DefaultLeaseLinger {
		t.Fatalf("lingers scheduled: %v", got)
	}
	p.say(t, h, "ev-2", "two")
	if a, r := p.st.counts(); a != 1 || r != 0 {
		t.Fatalf("after the second turn: %d acquires, %d releases; want 1, 0 (the kept lease reused)", a, r)
	}
	if n := p.timers.pending(); n != 1 {
		t.Fatalf("%d lingers pending, want 1 (the first stopped by the reuse)", n)
	}
	p.endLingers(t)
	if a, r := p.st.counts(); a != 1 || r != 1 {
		t.Fatalf("after the linger: %d acquires, %d releases; want 1, 1", a, r)
	}
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("lease after the linger: %+v", l)
	}
	if n := len(p.model.requests()); n != 2 || p.out.count() != 2 {
		t.Fatalf("%d model calls, %d replies; want 2, 2", n, p.out.count())
	}
}

// A message another process stores while this one lingers (it finds the lease held and
// leaves the message) is answered by this one once the linger ends, exactly once.
func TestMessageLeftWhileLingeringIsAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	a := newLingerer(t, h, "test-lingerer-a")
	b := h.process(nil, nil, nil) // another process on the same file, releasing at once
	h.waitOnCleanup(b.eng)
	a.say(t, h, "ev-a", "hello")
	if err := b.eng.Handle(context.Background(), evMsg(h, "a", "ev-b", "also this")); err != nil {
		t.Fatal(err)
	}
	if n := len(b.model.requests()); n != 0 || b.out.count() != 0 {
		t.Fatalf("B ran a turn while A held the lease: %d model calls, %d replies", n, b.out.count())
	}
	if n := len(a.model.requests()); n != 1 {
		t.Fatalf("A made %d model calls before its linger ended, want 1", n)
	}
	a.endLingers(t) // released; the look finds B's message; its turn lingers in turn
	reqs := a.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("A made %d model calls, want 2 (its turn, then the message B left)", len(reqs))
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != core.RoleUser || last.Content != "also this" {
		t.Fatalf("A's second turn ended with %+v, want B's message", last)
	}
	a.endLingers(t) // nothing more was left: no third turn
	if n := len(a.model.requests()); n != 2 || a.out.count() != 2 || b.out.count() != 0 {
		t.Fatalf("model calls %d, replies A %d B %d; want 2, 2, 0", n, a.out.count(), b.out.count())
	}
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("lease after the lingers: %+v", l)
	}
	if a.timers.pending() != 0 {
		t.Fatal("a linger is still pending")
	}
}

// Close releases every kept lease at once, and a turn ending after it releases at once.
func TestCloseReleasesKeptLeases(t *testing.T) {
	h := newHarness(t)
	p := newLingerer(t, h, "test-lingerer")
	for i, chat := range []string{"a", "b"} {
		if err := p.eng.Handle(context.Background(), evMsg(h, chat, fmt.Sprintf("ev-%d", i), "hi")); err != nil {
			t.Fatal(err)
		}
	}
	for _, chat := range []string{"a", "b"} {
		if _, ok := leaseOf(t, h, chat); !ok {
			t.Fatalf("no kept lease for %s before Close", chat)
		}
	}
	if err := p.eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, chat := range []string{"a", "b"} {
		if l, ok := leaseOf(t, h, chat); ok {
			t.Fatalf("lease of %s after Close: %+v", chat, l)
		}
	}
	if p.timers.pending() != 0 {
		t.Fatal("a linger is still pending after Close")
	}
	p.say(t, h, "ev-3", "after close")
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("a turn after Close kept its lease: %+v", l)
	}
	if a, r := p.st.counts(); a != 3 || r != 3 {
		t.Fatalf("%d acquires, %d releases; want 3, 3", a, r)
	}
}

// A kept lease whose known expiry is less than half the ttl away is not reused: the next
// turn acquires it again, which renews it.
func TestLeaseNearExpiryIsNotReused(t *testing.T) {
	h := newHarness(t)
	p := newLingerer(t, h, "test-lingerer")
	p.say(t, h, "ev-1", "one")
	kept, ok := leaseOf(t, h, "a")
	if !ok {
		t.Fatal("no kept lease")
	}
	h.clock = h.clock.Add(core.DefaultLeaseTTL/2 + time.Second) // 14 s left of 30
	p.say(t, h, "ev-2", "two")
	if a, _ := p.st.counts(); a != 2 {
		t.Fatalf("%d acquires, want 2 (the lease near its expiry taken again)", a)
	}
	if l, ok := leaseOf(t, h, "a"); !ok || !l.ExpiresAt.After(kept.ExpiresAt) {
		t.Fatalf("lease after the second turn: %+v (kept until %v), want renewed", l, kept.ExpiresAt)
	}
	p.endLingers(t)
	if _, ok := leaseOf(t, h, "a"); ok {
		t.Fatal("lease after the linger")
	}
}

// A turn whose context is cancelled releases the lease at once: no linger.
func TestCancelledTurnReleasesAtOnce(t *testing.T) {
	h := newHarness(t)
	p := newLingerer(t, h, "test-lingerer")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.model.Hook(func(core.ModelRequest) { cancel() })
	_ = p.eng.Handle(ctx, evMsg(h, "a", "ev-1", "one"))
	if err := p.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l, ok := leaseOf(t, h, "a"); ok {
		t.Fatalf("lease after a cancelled turn: %+v", l)
	}
	if len(p.timers.delays) != 0 {
		t.Fatalf("a cancelled turn lingered: %v", p.timers.delays)
	}
}

// A decision another process commits while this one lingers queues the agent's turn,
// which that process cannot start (the lease is held): this one runs it once the linger
// ends.
func TestDecisionLeftWhileLingeringStartsItsTurn(t *testing.T) {
	h := newHarness(t)
	a := newLingerer(t, h, "test-lingerer-a")
	b := h.process(nil, nil, nil)
	h.waitOnCleanup(b.eng)
	a.say(t, h, "ev-on", "/plan on")
	a.model.push(sessionID("a"), calls(propose("Notes", "Write the notes", "Check them")))
	a.say(t, h, "ev-plan", "plan the notes")
	if s := h.session("a"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s", s.Phase)
	}
	if _, ok := leaseOf(t, h, "a"); !ok {
		t.Fatal("setup: A's lease is not kept")
	}
	if err := b.eng.Handle(context.Background(), evMsg(h, "a", "ev-accept", "/plan accept")); err != nil {
		t.Fatal(err)
	}
	if n := len(b.model.requests()); n != 0 {
		t.Fatalf("B made %d model calls while A held the lease", n)
	}
	if s := h.session("a"); s.Phase != core.PhaseExecuting || len(s.Injections) == 0 {
		t.Fatalf("after B's accept: phase %s, %d injections; want executing with the turn queued", s.Phase, len(s.Injections))
	}
	before := len(a.model.requests())
	a.endLingers(t)
	if n := len(a.model.requests()) - before; n != 1 {
		t.Fatalf("A made %d model calls after its linger, want 1 (the accepted plan's turn)", n)
	}
	if s := h.session("a"); len(s.Injections) != 0 {
		t.Fatalf("injections left: %+v", s.Injections)
	}
	a.endLingers(t)
	if n := len(a.model.requests()) - before; n != 1 || len(b.model.requests()) != 0 {
		t.Fatalf("model calls after the linger: A %d, B %d; want 1, 0", n, len(b.model.requests()))
	}
}
