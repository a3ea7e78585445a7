package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store/pgtest"
)

// Lazy writes that meet in the writer's queue on PostgreSQL share one transaction, and
// each caller still gets its own outcome: a one-statement write that changed nothing is
// refused alone; a lost compare-and-set or a failed statement undoes the shared batch and
// every member runs again alone, so the others' changes are kept and the loser's is not.
// The batches are built by hand, so which writes meet does not depend on timing.
func TestPostgresLazyWritesShareABatch(t *testing.T) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1000, 0)
	lease := func(name, owner string) *writeJob {
		return &writeJob{ctx: ctx, lazy: true, wake: make(chan struct{}, 1), steps: []step{{what: "writing the lease",
			q: `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`,
			args: []any{name, owner, formatTime(now.Add(time.Minute)), formatTime(now)}, none: errLeaseHeld}}}
	}
	owner := func(name string) string {
		l, err := s.Lease(ctx, name)
		if err != nil {
			return "none"
		}
		return l.Owner
	}

	b := []*writeJob{lease("l1", "a"), lease("l1", "b"), lease("l2", "c")}
	s.runPGGroup(b)
	if b[0].err != nil || !errors.Is(b[1].err, errLeaseHeld) || b[2].err != nil {
		t.Fatalf("outcomes %v, %v, %v; want nil, lease held, nil", b[0].err, b[1].err, b[2].err)
	}
	if s.GroupStats().Shared != 1 || owner("l1") != "a" || owner("l2") != "c" {
		t.Fatalf("shared %d, l1 %s, l2 %s; want one shared batch, a, c", s.GroupStats().Shared, owner("l1"), owner("l2"))
	}

	// A lazy transition that lost its compare-and-set beside a lease write.
	se := core.Session{ID: "s1", Phase: core.PhasePlanning}
	if _, err := s.Commit(ctx, core.Change{Session: &se}); err != nil {
		t.Fatal(err)
	}
	se.Version = 7 // stored: 1
	steps, _, err := changeSteps(core.Change{Session: &se, Lazy: true,
		Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: "lost"}}}, se.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	b = []*writeJob{lease("l3", "d"), {ctx: ctx, lazy: true, wake: make(chan struct{}, 1), steps: steps}}
	s.runPGGroup(b)
	if b[0].err != nil || !errors.Is(b[1].err, core.ErrConflict) {
		t.Fatalf("outcomes %v, %v; want nil, conflict", b[0].err, b[1].err)
	}
	if h, err := s.Transcript(ctx, "s1", 10); err != nil || len(h) != 0 || owner("l3") != "d" {
		t.Fatalf("transcript %v (%v), l3 %s; want the lost change gone and the lease kept", h, err, owner("l3"))
	}

	// A statement that fails (no owner) beside one that does not.
	bad := lease("l4", "e")
	bad.steps[0].args[1] = nil
	b = []*writeJob{bad, lease("l5", "f")}
	s.runPGGroup(b)
	if b[0].err == nil || b[1].err != nil || owner("l4") != "none" || owner("l5") != "f" {
		t.Fatalf("outcomes %v, %v, l4 %s, l5 %s; want a failure, nil, none, f", b[0].err, b[1].err, owner("l4"), owner("l5"))
	}
	if got := s.GroupStats().Shared; got != 1 {
		t.Fatalf("%d shared batches committed, want only the first", got)
	}
}
