package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// TestManySessionsConcurrently drives full cycles in many sessions at once through one
// engine; each must end consistent: plan mode off, one revised and one completed plan, and
// an audit trail in order.
func TestManySessionsConcurrently(t *testing.T) {
	h := newHarness(t)
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		chat := fmt.Sprintf("s%02d", i)
		sid := sessionID(chat)
		h.model.push(sid,
			calls(propose("Plan "+chat, "A", "B")),
			calls(propose("Plan "+chat+" v2", "A", "B", "C")),
			calls(update(stepArg{Step: "A", Status: "completed"}, stepArg{Step: "B", Status: "completed"}, stepArg{Step: "C", Status: "cancelled"})),
			text("done"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, line := range []string{"/plan on", "work on " + chat, "/plan status", "/plan revise add C", "/plan accept"} {
				m := core.Message{Address: addr(chat), Sender: core.Person{ID: "local"}, Text: line}
				if err := h.eng.Handle(context.Background(), m); err != nil {
					errs <- fmt.Errorf("%s %q: %w", chat, line, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range n {
		chat := fmt.Sprintf("s%02d", i)
		s := h.session(chat)
		ps := h.plans(chat)
		if s.Phase != core.PhaseOff || len(ps) != 2 || ps[0].Status != core.PlanRevised || ps[1].Status != core.PlanCompleted {
			t.Errorf("%s ended inconsistent: phase %s, plans %v", chat, s.Phase, planStatuses(ps))
		}
		want := "[entered proposed revised proposed accepted step_updated completed]"
		if got := fmt.Sprint(h.events(chat)); got != want {
			t.Errorf("%s audit %s, want %s", chat, got, want)
		}
	}
}

func planStatuses(ps []core.Plan) []core.PlanStatus {
	var out []core.PlanStatus
	for _, p := range ps {
		out = append(out, p.Status)
	}
	return out
}

// TestRacingDecisionsOneEngine: an Accept click and /plan revise arrive together; the
// session queue orders them and the loser is told the plan was already decided.
func TestRacingDecisionsOneEngine(t *testing.T) {
	for round := range 10 {
		h := newHarness(t)
		p := h.toPending("main", fmt.Sprintf("Race %d", round))
		accept := core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Action: &core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID}}
		revise := core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Action: &core.Action{Kind: core.ActionRevise, ApprovalID: p.ApprovalID, Value: "smaller"}}
		var wg sync.WaitGroup
		for _, m := range []core.Message{accept, revise} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := h.eng.Handle(context.Background(), m); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		all := joinTexts(h.out.all())
		won := strings.Count(all, "Accepted plan v1") + strings.Count(all, "Sent plan v1 back")
		if won != 1 || !strings.Contains(all, "already decided") {
			t.Fatalf("round %d: %d decisions won:\n%s", round, won, all)
		}
		final := h.plan(p.ID).Status
		if final != core.PlanAccepted && final != core.PlanRevised {
			t.Fatalf("plan status %s", final)
		}
	}
}

// TestRacingDecisionsTwoProcesses: two engines (as two processes) share one database
// file and accept the same pending plan at once. Compare-and-set on the session row lets
// exactly one win.
func TestRacingDecisionsTwoProcesses(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("main", "Shared")
	st2, err := store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	out2 := &recorder{}
	model2 := newFakeModel()
	eng2 := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st2, Model: model2, Out: out2, Now: func() time.Time { return day }}))
	// Both engines must read the session before either writes: hold both model calls (made
	// after the decision commit) is too late, so race the decisions themselves many times.
	accept := core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Action: &core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID}}
	var wg sync.WaitGroup
	for _, eng := range []*engine.Engine{h.eng, eng2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := eng.Handle(context.Background(), accept); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	all := joinTexts(h.out.all()) + joinTexts(out2.all())
	if got := strings.Count(all, "Accepted plan v1"); got != 1 {
		t.Fatalf("%d engines accepted:\n%s", got, all)
	}
	if !strings.Contains(all, "already decided") && !strings.Contains(all, "changed at the same moment") {
		t.Fatalf("the loser was not told:\n%s", all)
	}
	accepted := 0
	for _, k := range h.events("main") {
		if k == core.EventAccepted {
			accepted++
		}
	}
	if accepted != 1 {
		t.Fatalf("%d accepted audit rows", accepted)
	}
}
