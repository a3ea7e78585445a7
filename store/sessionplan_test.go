package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/store/pgtest"
)

// SessionPlan reads what Session and Plan read, on both drivers: the session with its
// current plan, a session without a plan, and a missing session.
func TestSessionPlan(t *testing.T) {
	for _, driver := range []string{DriverSQLite, DriverPostgres} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "plangate.db")
			if driver == DriverPostgres {
				target = pgtest.Schema(t)
			}
			s, err := OpenDriver(ctx, driver, target)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := seed(t, s, "s1")
			se, p, err := s.SessionPlan(ctx, "s1", nil)
			if err != nil || !reflect.DeepEqual(se, want) || p == nil {
				t.Fatalf("got %+v, %v, %v; want %+v and its plan", se, p, err, want)
			}
			if stored, err := s.Plan(ctx, want.PlanID); err != nil || !reflect.DeepEqual(*p, stored) {
				t.Fatalf("plan %+v, want %+v (%v)", *p, stored, err)
			}
			bare := core.Session{ID: "s2", Phase: core.PhasePlanning}
			if _, err := s.Commit(ctx, core.Change{Session: &bare}); err != nil {
				t.Fatal(err)
			}
			if se, p, err := s.SessionPlan(ctx, "s2", nil); err != nil || se.ID != "s2" || p != nil {
				t.Fatalf("session without a plan: %+v, %v, %v", se, p, err)
			}
			if _, _, err := s.SessionPlan(ctx, "nope", nil); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("missing session: %v", err)
			}
			// The connection is still usable after the missing one (its read was ended).
			if _, _, err := s.SessionPlan(ctx, "s1", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A decision another process commits between SessionPlan's two SQLite reads is not seen
// by the second: the plan comes from the snapshot the session row was read in, so a
// racing decision never sees a pending session whose plan is already decided (the loser
// of core's TestRacingDecisionsTwoProcesses was once told "you already approved").
func TestSessionPlanOneSnapshot(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	pending := fullPlan("s1-p1", "s1", 1)
	pending.Status, pending.Decision, pending.Approvals = core.PlanPending, nil, nil
	se := fullSession("s1")
	se, err := s.Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{pending}})
	if err != nil {
		t.Fatal(err)
	}
	committed := false
	betweenSessionPlanReads = func() {
		if committed {
			return
		}
		committed = true
		next := se
		next.Phase, next.ApprovalID = core.PhaseExecuting, ""
		accepted := pending
		accepted.Status = core.PlanAccepted
		accepted.Decision = &plan.Decision{By: "U123", Outcome: "accepted", At: at(9), Channel: "slack"}
		if _, err := s.Commit(ctx, core.Change{Session: &next, Plans: []core.Plan{accepted}}); err != nil {
			t.Errorf("committing the other decision: %v", err)
		}
	}
	defer func() { betweenSessionPlanReads = func() {} }()
	got, p, err := s.SessionPlan(ctx, "s1", nil)
	if err != nil || !committed {
		t.Fatalf("SessionPlan: %v (other decision committed: %v)", err, committed)
	}
	if got.Version != se.Version || got.Phase != core.PhaseAwaitingApproval || p == nil || p.Status != core.PlanPending {
		t.Fatalf("torn read: session v%d %s with plan %v; want v%d awaiting_approval with the pending plan",
			got.Version, got.Phase, p, se.Version)
	}
	got, p, err = s.SessionPlan(ctx, "s1", nil)
	if err != nil || got.Phase != core.PhaseExecuting || p == nil || p.Status != core.PlanAccepted {
		t.Fatalf("after the decision: session %s, plan %v, %v", got.Phase, p, err)
	}
}

// The event committed (with its session row) right after SessionPlan's inbound check is
// seen by neither part of the read: the session comes from the check's snapshot, as it
// was before that event, so the message is handled against the state it was checked on.
func TestSessionPlanInboundOneSnapshot(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	se := core.Session{ID: "s1", Phase: core.PhaseOff}
	se, err := s.Commit(ctx, core.Change{Session: &se})
	if err != nil {
		t.Fatal(err)
	}
	key := core.InboundKey{Channel: "telegram", Account: "bot", EventID: "9"}
	committed := false
	betweenSessionPlanReads = func() {
		if committed {
			return
		}
		committed = true
		next := se
		next.LastFeedback = "handled elsewhere"
		if _, err := s.Commit(ctx, core.Change{Session: &next, Inbound: &key, Lazy: true}); err != nil {
			t.Errorf("committing the event elsewhere: %v", err)
		}
	}
	defer func() { betweenSessionPlanReads = func() {} }()
	got, _, err := s.SessionPlan(ctx, "s1", &key)
	if err != nil || !committed || got.Version != se.Version {
		t.Fatalf("got v%d, %v (committed meanwhile: %v); want v%d, not a duplicate", got.Version, err, committed, se.Version)
	}
	if _, _, err := s.SessionPlan(ctx, "s1", &key); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("after the commit: %v, want ErrDuplicate", err)
	}
}
