package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// Replicas whose clocks disagree: on PostgreSQL a lease's expiry is written and compared
// by the database's clock, so the clock a replica passes decides nothing about who holds
// a lease. The skews are minutes, far beyond a lease's ttl.
const skew = 5 * time.Minute

// skewed is the real clock moved by d: another replica's wall clock.
func skewed(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

// untilTaken retries take until it succeeds (the lease ended by the database's clock) and
// fails the test if that never happens within a few seconds.
func untilTaken(t *testing.T, take func() (core.Lease, bool, error)) core.Lease {
	t.Helper()
	for range 500 {
		l, ok, err := take()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the lease was never free, though its holder's last renewal was for a millisecond")
	return core.Lease{}
}

// A replica whose clock runs minutes ahead does not take a live lease, one whose clock
// runs behind takes a lease as soon as it has ended by the database's clock, and the end
// either writes lies within the ttl of the database's now.
func TestLeasesByTheDatabaseClock(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	a, ahead, behind := mustOpen(t, store.DriverPostgres, dsn), mustOpen(t, store.DriverPostgres, dsn), mustOpen(t, store.DriverPostgres, dsn)
	const name, ttl = "session:s1", time.Minute
	holder := func() string {
		t.Helper()
		l, err := a.Lease(ctx, name, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l.Owner
	}
	if _, ok, err := a.AcquireLease(ctx, name, "a", time.Now(), ttl); err != nil || !ok {
		t.Fatalf("a's take: %v %v", ok, err)
	}
	for _, r := range []struct {
		who   string
		st    *store.Store
		clock func() time.Time
	}{{"ahead", ahead, skewed(skew)}, {"behind", behind, skewed(-skew)}} {
		now := r.clock()
		held, ok, err := r.st.AcquireLease(ctx, name, r.who, now, ttl)
		if err != nil || ok {
			t.Fatalf("%s took a's live lease: %v %v", r.who, ok, err)
		}
		// It sees a's lease end within the ttl on its own clock.
		if held.Owner != "a" || !held.ExpiresAt.After(now) || held.ExpiresAt.After(now.Add(ttl)) {
			t.Fatalf("%s sees %+v at %v; want a's, ending within %v", r.who, held, now, ttl)
		}
		if got := holder(); got != "a" {
			t.Fatalf("after %s's try the lease is %s's", r.who, got)
		}
		ls, err := r.st.Leases(ctx, "session:", now)
		if err != nil || len(ls) != 1 || !ls[0].ExpiresAt.After(now) {
			t.Fatalf("%s lists %+v, %v; want a's lease, live", r.who, ls, err)
		}
	}
	// The replica ahead writes its lease to end ttl after the database's now, not after its
	// own: read on the real clock it ends within the ttl.
	if _, ok, err := ahead.AcquireLease(ctx, "session:s2", "ahead", skewed(skew)(), ttl); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if l, err := a.Lease(ctx, "session:s2", time.Now()); err != nil || l.ExpiresAt.After(time.Now().Add(ttl)) {
		t.Fatalf("the lease of the replica ahead: %+v, %v; want it to end within %v of the database's now", l, err, ttl)
	}

	// a's last renewal is for a millisecond, and it dies. The replica behind, which by its
	// own clock would wait five minutes more, takes the lease once it has ended.
	if _, ok, err := a.AcquireLease(ctx, name, "a", time.Now(), time.Millisecond); err != nil || !ok {
		t.Fatal(ok, err)
	}
	untilTaken(t, func() (core.Lease, bool, error) {
		return behind.AcquireLease(ctx, name, "behind", skewed(-skew)(), ttl)
	})
	if got := holder(); got != "behind" {
		t.Fatalf("after the takeover the lease is %s's", got)
	}
	if _, ok, err := ahead.AcquireLease(ctx, name, "ahead", skewed(skew)(), ttl); err != nil || ok {
		t.Fatalf("ahead took the new holder's live lease: %v %v", ok, err)
	}
	if _, ok, err := a.AcquireLease(ctx, name, "a", time.Now(), ttl); err != nil || ok {
		t.Fatalf("a, back, took the new holder's live lease: %v %v", ok, err)
	}
	if got := holder(); got != "behind" {
		t.Fatalf("the lease is %s's, want behind's", got)
	}
}

// The same for the election: a standby whose clock is minutes ahead does not lead while
// the leader renews, and one whose clock is behind leads as soon as the leader's lease
// has ended by the database's clock.
func TestElectionByTheDatabaseClock(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	const name = "poller:telegram:bot"
	elector := func(owner string, clock func() time.Time) *store.Elector {
		return &store.Elector{Name: name, Owner: owner, St: mustOpen(t, store.DriverPostgres, dsn), Now: clock, TTL: time.Minute}
	}
	a, ahead, behind := elector("host/1/a", time.Now), elector("host/2/ahead", skewed(skew)), elector("host/3/behind", skewed(-skew))
	st := mustOpen(t, store.DriverPostgres, dsn)
	holder := func() string {
		t.Helper()
		l, err := st.Lease(ctx, name, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l.Owner
	}
	step := func(e *store.Elector, want bool) {
		t.Helper()
		got, err := e.Step(ctx)
		if err != nil || got != want || e.Leading() != want {
			t.Fatalf("%s: leading %v (Leading() %v, err %v), want %v", e.Owner, got, e.Leading(), err, want)
		}
	}
	step(a, true)
	for range 3 {
		step(ahead, false)
		step(behind, false)
		step(a, true)
	}
	if got := holder(); got != "host/1/a" {
		t.Fatalf("the lease is %s's, want a's", got)
	}
	if h := ahead.Holder(); h.Owner != "host/1/a" || !h.ExpiresAt.After(ahead.Now()) {
		t.Fatalf("the standby ahead sees %+v at %v; want a's lease, live", h, ahead.Now())
	}
	// a renews for a millisecond and dies: it stops leading by its own clock, and the
	// standby behind leads once the lease has ended by the database's clock.
	a.TTL = time.Millisecond
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	untilTaken(t, func() (core.Lease, bool, error) {
		ok, err := behind.Step(ctx)
		return behind.Holder(), ok, err
	})
	if a.Leading() {
		t.Fatal("a still leads after its lease ended")
	}
	step(ahead, false)
	a.TTL = time.Minute
	step(a, false)
	if got := holder(); got != "host/3/behind" {
		t.Fatalf("the lease is %s's, want behind's", got)
	}
}

// SQLite has one host, whose clock is the caller's: a lease ends when the clock passed
// reaches its end, a nanosecond before it is still held. (TestLeaseLifecycle steps through
// a lease's life the same way.)
func TestSQLiteLeasesByTheHostClock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	a, b := mustOpen(t, store.DriverSQLite, path), mustOpen(t, store.DriverSQLite, path)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const ttl = 30 * time.Second
	if _, ok, err := a.AcquireLease(ctx, "session:s1", "a", t0, ttl); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if l, err := b.Lease(ctx, "session:s1", t0); err != nil || !l.ExpiresAt.Equal(t0.Add(ttl)) {
		t.Fatalf("lease: %+v, %v; want a's, until %v", l, err, t0.Add(ttl))
	}
	if _, ok, err := b.AcquireLease(ctx, "session:s1", "b", t0.Add(ttl-time.Nanosecond), ttl); err != nil || ok {
		t.Fatalf("b took a's lease before it ended: %v %v", ok, err)
	}
	if _, ok, err := b.AcquireLease(ctx, "session:s1", "b", t0.Add(ttl), ttl); err != nil || !ok {
		t.Fatalf("b did not take a's lease at its end: %v %v", ok, err)
	}
	if l, err := a.Lease(ctx, "session:s1", t0.Add(ttl)); err != nil || l.Owner != "b" || !l.ExpiresAt.Equal(t0.Add(2*ttl)) {
		t.Fatalf("lease: %+v, %v; want b's, until %v", l, err, t0.Add(2*ttl))
	}
}
