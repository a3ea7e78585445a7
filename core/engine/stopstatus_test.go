package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
)

// After a stop, /plan status says why the plan stopped, when, the notice, and what a
// person can do; reading the status clears nothing. A person's message starts the
// execution again and its first commit clears Run.Stop in the store, while the audit log
// keeps the "stopped" row; /plan status then shows no stop.
func TestPlanStatusShowsTheStopUntilAPersonGoesOn(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxIterations = 2 })
	p := h.toExecuting("main", "Loop")
	sid := sessionID("main")
	for range 2 { // both model calls of the turn
		h.model.push(sid, calls(call("plan_status", map[string]any{})))
	}
	h.say("main", "local", "go on")
	if got := h.plan(p.ID).Run.Stop; got == nil || got.Kind != plan.StopMaxIterations {
		t.Fatalf("setup: stored stop %+v", got)
	}
	status := lastText(h.say("main", "local", "/plan status"))
	mustContain(t, status,
		"stopped: the turn ran out of model calls (max_iterations_reached) at 2026-11-30 09:00 UTC",
		"notice: Stopped after 2 model calls",
		"next: send a message to let the agent go on · /plan revise <feedback> for a new version · /plan off to end it")
	if h.plan(p.ID).Run.Stop == nil {
		t.Fatal("/plan status cleared the stop")
	}

	h.model.push(sid, text("Going on."))
	mustContain(t, lastText(h.say("main", "local", "continue, please")), "Going on.")
	got := h.plan(p.ID)
	if got.Run.Stop != nil {
		t.Fatalf("the stop is still stored after a person's message went on: %+v", got.Run.Stop)
	}
	if got.Status != core.PlanAccepted || got.Body.Title != "Loop" || len(got.Body.Steps) != 2 {
		t.Fatalf("clearing the stop changed the plan: %+v", got)
	}
	stopped := 0
	for _, k := range h.events("main") {
		if k == core.EventStopped {
			stopped++
		}
	}
	if stopped != 1 {
		t.Errorf("%d stopped audit rows, want the 1 of the stop", stopped)
	}
	if s := lastText(h.say("main", "local", "/plan status")); strings.Contains(s, "stopped:") {
		t.Errorf("/plan status still shows a stop:\n%s", s)
	}
}

// A turn that stops again keeps the new stop: the clearing of the old one does not
// overwrite it.
func TestStopAgainAfterGoingOnKeepsTheNewStop(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxIterations = 2 })
	p := h.toExecuting("main", "Loop")
	sid := sessionID("main")
	for range 2 { // both model calls of the turn
		h.model.push(sid, calls(call("plan_status", map[string]any{})))
	}
	h.say("main", "local", "go on")
	first := h.plan(p.ID).Run.Stop
	if first == nil {
		t.Fatal("setup: no stop")
	}
	h.clock = h.clock.Add(90 * time.Minute)
	for range 2 { // both model calls of the turn
		h.model.push(sid, calls(call("plan_status", map[string]any{})))
	}
	h.say("main", "local", "try again")
	got := h.plan(p.ID).Run.Stop
	if got == nil || got.Kind != plan.StopMaxIterations || !got.At.After(first.At) {
		t.Fatalf("stored stop %+v, want the second stop (after %v)", got, first.At)
	}
}

// A turn whose first act after a stop is update_plan writes the plan with the step moved
// and the stop cleared: the plan write of that commit does not bring the old stop back.
func TestGoingOnWithUpdatePlanClearsTheStop(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxIterations = 2 })
	p := h.toExecuting("main", "Loop")
	sid := sessionID("main")
	for range 2 { // both model calls of the stopped turn
		h.model.push(sid, calls(call("plan_status", map[string]any{})))
	}
	h.say("main", "local", "go on")
	if h.plan(p.ID).Run.Stop == nil {
		t.Fatal("setup: no stop")
	}
	h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "in_progress"})))
	h.model.push(sid, text("On step 1."))
	h.say("main", "local", "continue")
	got := h.plan(p.ID)
	if got.Run.Stop != nil || got.Body.Steps[0].Status != plan.StepInProgress {
		t.Fatalf("stored run %+v, step 1 %s; want no stop and step 1 in_progress", got.Run, got.Body.Steps[0].Status)
	}
}
