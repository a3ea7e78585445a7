package store

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// TestOnCommitAndPendingPlans: the hook sees every Commit with its durability, and
// PendingPlans counts only pending versions.
func TestOnCommitAndPendingPlans(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var durable, lazy int
	s.OnCommit(func(d bool, _ time.Duration) {
		if d {
			durable++
		} else {
			lazy++
		}
	})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	se := core.Session{ID: "s1", Address: core.Address{Channel: "t", Chat: "c"}, Phase: core.PhaseAwaitingApproval, CreatedAt: now, UpdatedAt: now}
	plan := func(id string, v int, st core.PlanStatus) core.Plan {
		return core.Plan{ID: id, SessionID: "s1", Version: v, Status: st, CreatedAt: now, UpdatedAt: now}
	}
	if _, err := s.Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{plan("p1", 1, core.PlanSuperseded), plan("p2", 2, core.PlanPending)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}}, Lazy: true}); err != nil {
		t.Fatal(err)
	}
	if durable != 1 || lazy != 1 {
		t.Errorf("hook saw %d durable and %d lazy commits, want 1 and 1", durable, lazy)
	}
	if n, err := s.PendingPlans(ctx); err != nil || n != 1 {
		t.Errorf("pending plans: %d, %v; want 1", n, err)
	}
	s.OnCommit(nil)
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Plans: []core.Plan{plan("p2", 2, core.PlanAccepted)}}); err != nil {
		t.Fatal(err)
	}
	if durable != 1 {
		t.Errorf("a removed hook still counted: %d", durable)
	}
	if n, err := s.PendingPlans(ctx); err != nil || n != 0 {
		t.Errorf("pending plans after the decision: %d, %v; want 0", n, err)
	}
}
