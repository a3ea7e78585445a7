package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestElectionSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	testElection(t, func() *store.Store { return mustOpen(t, store.DriverSQLite, path) })
}

func mustOpen(t *testing.T, driver, target string) *store.Store {
	t.Helper()
	s, err := store.OpenDriver(context.Background(), driver, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Two replicas (two store instances on one SQLite file, whose clock is the one host's: the
// fake clock here) campaign for the polling lease: one leads, the other stands by while the leader renews; when the leader
// stops renewing (it died), the other leads within ElectionTTL and the old leader, back,
// finds itself standing by. A leader that cannot reach the database steps down when its
// lease would have expired.
func testElection(t *testing.T, open func() *store.Store) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	a := &store.Elector{Name: "poller:telegram:bot", Owner: "host/1/a", St: open(), Now: clock.Now}
	b := &store.Elector{Name: "poller:telegram:bot", Owner: "host/2/b", St: open(), Now: clock.Now}
	step := func(e *store.Elector, want bool) {
		t.Helper()
		got, err := e.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || e.Leading() != want {
			t.Fatalf("%s at %s: leading %v (Leading() %v), want %v", e.Owner, clock.Now().Format(time.TimeOnly), got, e.Leading(), want)
		}
	}
	aChanged := a.Changed()
	step(a, true)
	select {
	case <-aChanged:
	default:
		t.Fatal("taking the lease did not signal Changed")
	}
	step(b, false)
	if h := b.Holder(); h.Owner != "host/1/a" {
		t.Errorf("standby sees holder %+v", h)
	}
	for range 6 { // 30 s of renewals every 5 s: a keeps the lease
		clock.Add(store.ElectionEvery)
		step(a, true)
		step(b, false)
	}
	// a dies: no more renewals. b stands by until a's lease has run out, then leads.
	clock.Add(store.ElectionTTL - time.Second)
	step(b, false)
	clock.Add(time.Second)
	step(b, true)
	step(a, false) // a, back, does not lead
	if h := a.Holder(); h.Owner != "host/2/b" {
		t.Errorf("the old leader sees holder %+v", h)
	}

	// A holder that is a gone process is taken over at once.
	c := &store.Elector{Name: "poller:telegram:bot", Owner: "host/3/c", St: open(), Now: clock.Now,
		Gone: func(owner string) bool { return owner == "host/2/b" }}
	step(c, true)
	step(b, false)

	// c loses the database: it keeps leading until its lease would expire, then stops.
	clock.Add(store.ElectionEvery)
	step(c, true)
	c.St = brokenLeases{}
	changed := c.Changed()
	clock.Add(store.ElectionTTL - time.Second)
	if leading, err := c.Step(ctx); err == nil || !leading {
		t.Fatalf("renewal failing before expiry: leading %v, err %v; want leading and an error", leading, err)
	}
	clock.Add(time.Second)
	if leading, err := c.Step(ctx); err == nil || leading {
		t.Fatalf("renewal failing at expiry: leading %v, err %v; want standing by and an error", leading, err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("stepping down did not signal Changed")
	}
	step(a, true) // and another replica takes over at that instant
}

// brokenLeases is a store that cannot be reached.
type brokenLeases struct{}

func (brokenLeases) AcquireLease(context.Context, string, string, time.Time, time.Duration) (core.Lease, bool, error) {
	return core.Lease{}, false, errors.New("connection refused")
}
func (brokenLeases) ReleaseLease(context.Context, string, string) error {
	return errors.New("connection refused")
}
