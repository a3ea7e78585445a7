package engine_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
)

// A stop condition of an executing plan is data: the plan version in the store records its
// kind and notice, and the audit log has a "stopped" row; a stop outside execution (no plan
// carried out) records nothing on any plan.
func TestExecutingStopIsRecordedOnThePlanAndAudited(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxIterations = 2; c.WorkspaceCopy = true })
	p := h.toExecuting("main", "Loop")
	sid := sessionID("main")
	for range 3 {
		h.model.push(sid, calls(call("plan_status", map[string]any{})))
	}
	mustContain(t, lastText(h.say("main", "local", "go on")), "Stopped after 2 model calls")
	got := h.plan(p.ID)
	if got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopMaxIterations || !strings.Contains(got.Run.Stop.Message, "Stopped after 2 model calls") {
		t.Fatalf("the stored plan's run is %+v, want a max_iterations_reached stop", got.Run)
	}
	if got.Run.Stop.At.IsZero() {
		t.Error("the stop has no time")
	}
	evs, err := h.st.Events(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var stopped []core.Event
	for _, e := range evs {
		if e.Kind == core.EventStopped {
			stopped = append(stopped, e)
		}
	}
	if len(stopped) != 1 || stopped[0].PlanID != p.ID || !strings.HasPrefix(stopped[0].Detail, "max_iterations_reached: ") {
		t.Fatalf("stopped audit rows %+v, want one for %s", stopped, p.ID)
	}
	// The plan file and PLAN.json on disk say so; once a person lets the agent go on,
	// neither does.
	file := string(readFile(t, got.File))
	mustContain(t, file, "## Stopped\n\n- stopped: the turn ran out of model calls (max_iterations_reached) at ")
	if doc := planJSON(t, h, "main"); doc.Stop == nil || doc.Stop.Kind != plan.StopMaxIterations || doc.Stop.Message != got.Run.Stop.Message {
		t.Fatalf("PLAN.json stop %+v, want the stored one %+v", doc.Stop, got.Run.Stop)
	}
	h.model.push(sid, text("going on"))
	h.say("main", "local", "go on, please")
	if got := h.plan(p.ID); got.Run.Stop != nil {
		t.Fatalf("the stop %+v stays after a person let the agent go on", got.Run.Stop)
	}
	if strings.Contains(string(readFile(t, got.File)), "## Stopped") || planJSON(t, h, "main").Stop != nil {
		t.Error("the plan file or PLAN.json still says the plan stopped")
	}

	// Planning (no plan carried out) stops the same way and records nothing.
	h2 := newHarness(t, func(c *engine.Config) { c.MaxIterations = 2 })
	q := h2.toPending("side", "Side")
	for range 3 {
		h2.model.push(sessionID("side"), calls(call("plan_status", map[string]any{})))
	}
	mustContain(t, lastText(h2.say("side", "local", "/plan revise look again")), "Stopped after 2 model calls")
	for _, v := range h2.plans("side") {
		if !v.Run.IsZero() {
			t.Errorf("plan %s v%d (of %s) records %+v outside execution", v.ID, v.Version, q.ID, v.Run)
		}
	}
	for _, k := range h2.events("side") {
		if k == core.EventStopped {
			t.Error("a stop outside execution was audited as a plan's stop")
		}
	}
}

// planJSON reads and decodes chat's PLAN.json.
func planJSON(t *testing.T, h *harness, chat string) engine.PlanDocument {
	t.Helper()
	var doc engine.PlanDocument
	data := readFile(t, filepath.Join(h.wsDir(chat), "PLAN.json"))
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("PLAN.json: %v\n%s", err, data)
	}
	return doc
}
