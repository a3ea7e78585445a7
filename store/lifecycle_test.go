package store

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestReopenMidCycle(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	cur := seed(t, s, "s1")
	// A plan is proposed and waits for approval...
	cur.Phase = core.PhaseAwaitingApproval
	cur.PlanID, cur.ApprovalID = "s1-p2", "s1-a2"
	p2 := fullPlan("s1-p2", "s1", 2)
	p2.Status, p2.ApprovalID, p2.Decision = core.PlanPending, "s1-a2", nil
	cur, err := s.Commit(ctx, core.Change{
		Session:  &cur,
		Plans:    []core.Plan{p2},
		Events:   []core.Event{{PlanID: "s1-p2", PlanVersion: 2, Kind: core.EventProposed, At: at(20)}},
		Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: "plan v2", At: at(20)}},
		Inbound:  &core.InboundKey{Channel: "slack", Account: "T1", EventID: "E2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// ...and the process restarts.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	*s = *s2 // openTest's cleanup now closes the reopened store

	read, err := s.Session(ctx, "s1")
	if err != nil || !reflect.DeepEqual(read, cur) {
		t.Fatalf("after reopen session = %+v (%v)\nwant %+v", read, err, cur)
	}
	p, err := s.PlanByApproval(ctx, "s1-a2")
	if err != nil || !reflect.DeepEqual(p, p2) {
		t.Fatalf("after reopen plan = %+v (%v)", p, err)
	}
	if seen, _ := s.SeenInbound(ctx, core.InboundKey{Channel: "slack", Account: "T1", EventID: "E2"}); !seen {
		t.Error("inbound key lost across reopen")
	}
	// The decision arrives after the restart, from the version read back.
	read.Phase, read.ApprovalID = core.PhaseExecuting, ""
	p.Status = core.PlanAccepted
	p.Decision = &plan.Decision{By: "U123", At: at(30), Channel: "slack", Outcome: "accepted"}
	after, err := s.Commit(ctx, core.Change{Session: &read, Plans: []core.Plan{p},
		Events: []core.Event{{PlanID: p.ID, PlanVersion: 2, Kind: core.EventAccepted, At: at(30)}}})
	if err != nil {
		t.Fatalf("commit after reopen: %v", err)
	}
	if after.Version != cur.Version+1 {
		t.Fatalf("version %d, want %d", after.Version, cur.Version+1)
	}
	evs, _ := s.Events(ctx, "s1")
	if len(evs) != 2 || evs[0].Kind != core.EventProposed || evs[1].Kind != core.EventAccepted {
		t.Fatalf("events = %+v", evs)
	}
}

func TestConcurrentCommitsAllLand(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	const sessions, steps = 16, 15
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			cur := core.Session{ID: id, Phase: core.PhasePlanning}
			for j := range steps {
				next, err := s.Commit(ctx, core.Change{
					Session:  &cur,
					Events:   []core.Event{{Kind: core.EventStepUpdated, Detail: fmt.Sprint(j)}},
					Messages: []core.ChatMessage{{Role: core.RoleUser, Content: fmt.Sprint(j)}},
					Inbound:  &core.InboundKey{Channel: "c", Account: id, EventID: fmt.Sprint(j)},
				})
				if err != nil {
					errs <- fmt.Errorf("%s step %d: %w", id, j, err)
					return
				}
				// Read back through the read pool right away: it must see the commit.
				read, err := s.Session(ctx, id)
				if err != nil || read.Version != next.Version {
					errs <- fmt.Errorf("%s step %d: read version %d (%v), committed %d", id, j, read.Version, err, next.Version)
					return
				}
				cur = next
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := s.Sessions(ctx)
	if err != nil || len(all) != sessions {
		t.Fatalf("Sessions = %d (%v), want %d", len(all), err, sessions)
	}
	for _, se := range all {
		tr, _ := s.Transcript(ctx, se.ID, 0)
		evs, _ := s.Events(ctx, se.ID)
		if se.Version != steps || len(tr) != steps || len(evs) != steps {
			t.Errorf("%s: version %d, %d messages, %d events; want %d each", se.ID, se.Version, len(tr), len(evs), steps)
		}
	}
}
