package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

var leaseT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	st, _ := openTest(t)
	const name = "session:telegram:1:2:"
	ttl := 30 * time.Second

	l, ok, err := st.AcquireLease(ctx, name, "A", leaseT0, ttl)
	if err != nil || !ok || l.Owner != "A" || !l.ExpiresAt.Equal(leaseT0.Add(ttl)) {
		t.Fatalf("first acquire: %+v %v %v", l, ok, err)
	}
	// B is refused while A's lease runs, and learns who holds it until when.
	held, ok, err := st.AcquireLease(ctx, name, "B", leaseT0.Add(10*time.Second), ttl)
	if err != nil || ok || held.Owner != "A" || !held.ExpiresAt.Equal(leaseT0.Add(ttl)) {
		t.Fatalf("B while A holds: %+v %v %v", held, ok, err)
	}
	// A renews.
	if l, ok, err = st.AcquireLease(ctx, name, "A", leaseT0.Add(20*time.Second), ttl); err != nil || !ok || !l.ExpiresAt.Equal(leaseT0.Add(50*time.Second)) {
		t.Fatalf("renew: %+v %v %v", l, ok, err)
	}
	// SQLite's clock is its one host's, the caller's now: B, a moment before the lease
	// ends by it, is refused; at the end, it takes over.
	if held, ok, err := st.AcquireLease(ctx, name, "B", leaseT0.Add(50*time.Second-time.Nanosecond), ttl); err != nil || ok || held.Owner != "A" {
		t.Fatalf("B a moment before expiry: %+v %v %v", held, ok, err)
	}
	// A dies: once the lease lapses it is listed as ended, and B takes over.
	ls, err := st.Leases(ctx, "session:", leaseT0.Add(50*time.Second))
	if err != nil || len(ls) != 1 || ls[0].Owner != "A" || !ls[0].ExpiresAt.Equal(leaseT0.Add(50*time.Second)) {
		t.Fatalf("leases: %v %v", ls, err)
	}
	if l, ok, err = st.AcquireLease(ctx, name, "B", leaseT0.Add(50*time.Second), ttl); err != nil || !ok || l.Owner != "B" {
		t.Fatalf("take over: %+v %v %v", l, ok, err)
	}
	// A's late release does not free B's lease.
	if err := st.ReleaseLease(ctx, name, "A"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Lease(ctx, name, leaseT0); err != nil || got.Owner != "B" {
		t.Fatalf("after A's release: %+v %v", got, err)
	}
	if err := st.ReleaseLease(ctx, name, "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lease(ctx, name, leaseT0); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("after B's release: %v", err)
	}
	for _, bad := range []struct {
		name, owner string
		ttl         time.Duration
	}{{"", "A", ttl}, {name, "", ttl}, {name, "A", 0}} {
		if _, _, err := st.AcquireLease(ctx, bad.name, bad.owner, leaseT0, bad.ttl); err == nil {
			t.Errorf("AcquireLease(%q, %q, %v) should fail", bad.name, bad.owner, bad.ttl)
		}
	}
}

// Two processes (two Store instances on one file) racing for the same lease: exactly one
// wins each round.
func TestLeaseOneWinnerAcrossStores(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for round := range 20 {
		name := fmt.Sprintf("session:race-%d", round)
		var wins sync.WaitGroup
		results := make([]bool, 2)
		for i, st := range []*Store{a, b} {
			wins.Add(1)
			go func() {
				defer wins.Done()
				_, ok, err := st.AcquireLease(ctx, name, fmt.Sprintf("owner-%d", i), leaseT0, time.Minute)
				if err != nil {
					t.Error(err)
				}
				results[i] = ok
			}()
		}
		wins.Wait()
		if results[0] == results[1] {
			t.Fatalf("round %d: winners %v, want exactly one", round, results)
		}
	}
}

func TestToolRunsStartedOnceAndUnfinishedListed(t *testing.T) {
	ctx := context.Background()
	st, path := openTest(t)
	run := core.ToolRun{SessionID: "s1", CallID: "call_1", Tool: "run_command", Detail: "run_command make", StartedAt: leaseT0}
	if err := st.StartToolRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.StartToolRun(ctx, run); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("second start: %v, want ErrDuplicate", err)
	}
	done := core.ToolRun{SessionID: "s1", CallID: "call_2", Tool: "write_file", Detail: "write_file on a.txt", StartedAt: leaseT0.Add(time.Second)}
	if err := st.StartToolRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	done.Outcome, done.FinishedAt = core.ToolRunOK, leaseT0.Add(2*time.Second)
	if err := st.FinishToolRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishToolRun(ctx, done); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("finishing twice: %v, want ErrNotFound", err)
	}
	if err := st.FinishToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "call_1"}); err == nil {
		t.Fatal("finishing without an outcome should fail")
	}
	// A crash: reopen the file, the unfinished run is still there.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	un, err := st2.UnfinishedToolRuns(ctx, "s1")
	if err != nil || len(un) != 1 || un[0].CallID != "call_1" || un[0].Detail != "run_command make" || !un[0].StartedAt.Equal(leaseT0) {
		t.Fatalf("unfinished after reopen: %+v %v", un, err)
	}
	if un, err := st2.UnfinishedToolRuns(ctx, "other"); err != nil || len(un) != 0 {
		t.Fatalf("other session: %+v %v", un, err)
	}
	all, err := st2.ToolRunsOf(ctx, "s1")
	if err != nil || len(all) != 2 || all[1].Outcome != core.ToolRunOK || !all[1].FinishedAt.Equal(leaseT0.Add(2*time.Second)) {
		t.Fatalf("runs: %+v %v", all, err)
	}
}
