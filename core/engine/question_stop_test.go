package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A question asked while a plan executes is the plan's stop requires_human_decision: on
// the version in the store, audited stopped, the write the model put after it not run;
// the answer ends the stop and the work goes on.
func TestQuestionWhileExecutingWaitsForAPerson(t *testing.T) {
	h := guardHarness(t, nil)
	p := h.toExecutingAll("main", "Migrate")
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	sid := sessionID("main")
	h.model.push(sid, calls(
		call("ask_user_question", map[string]any{"question": "Drop the old table?", "options": []string{"Yes", "No"}}),
		call("write_file", map[string]any{"path": "drop.sql", "content": "DROP TABLE old;\n"})))
	rs := h.say("main", "local", "go on")
	mustContain(t, joinTexts(rs), "Question: Drop the old table?")
	if _, err := os.Stat(filepath.Join(ws, "drop.sql")); err == nil {
		t.Fatal("the write after the question ran")
	}
	stoppedWith(t, h, "main", p.ID, plan.StopHumanDecision)
	got := h.plan(p.ID)
	mustContain(t, got.Run.Stop.Message, "Drop the old table?", "/plan answer")
	if got.Status != core.PlanAccepted || h.session("main").Phase != core.PhaseExecuting {
		t.Fatalf("plan %s, phase %s: the question changed the decision", got.Status, h.session("main").Phase)
	}

	h.model.push(sid, calls(call("write_file", map[string]any{"path": "keep.sql", "content": "-- kept\n"})), text("Kept it."))
	h.say("main", "local", "/plan answer 2")
	if got := h.plan(p.ID); got.Run.Stop != nil {
		t.Fatalf("the answer left the stop %+v", got.Run.Stop)
	}
	if _, err := os.Stat(filepath.Join(ws, "keep.sql")); err != nil {
		t.Fatalf("the work did not go on after the answer: %v", err)
	}

	// A question outside execution records nothing on any plan.
	h2 := guardHarness(t, nil)
	h2.say("side", "local", "/plan on")
	h2.model.push(sessionID("side"), calls(call("ask_user_question", map[string]any{"question": "Which module?", "options": []string{"a", "b"}})))
	h2.say("side", "local", "plan it")
	for _, v := range h2.plans("side") {
		if !v.Run.IsZero() {
			t.Errorf("plan v%d records %+v", v.Version, v.Run)
		}
	}
	for _, k := range h2.events("side") {
		if k == core.EventStopped {
			t.Error("a question while planning was audited as a plan's stop")
		}
	}
}
