package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/tools"
)

// The operator's boundary (plan_mode.boundary) over a hostile model: a proposal that
// widens it is refused and stores nothing; one inside it inherits the forbidden paths and
// the budget, shows them on the chat card, in the plan file and in PLAN.json, and the
// runtime holds them: a write to a forbidden path and a write past the inherited budget
// are refused, stop the turn, and leave no file on disk.
func TestBoundaryIsInheritedAndHeld(t *testing.T) {
	boundary := plan.Boundary{ForbiddenPaths: []string{"deploy/**"}, ForbiddenTools: []string{"ts__wipe"}, MaxFilesChanged: 2}
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy, c.Boundary = true, boundary })
	h.tools = tools.New(tools.Config{ProtectPlanCopy: true})
	h.open()
	sid := sessionID("main")
	h.say("main", "local", "/plan on")

	// Widening: a path inside a forbidden one, a forbidden tool, a larger budget.
	wide := call("exit_plan_mode", map[string]any{"title": "Deploy", "plan": []stepArg{{Step: "Change the deploy"}},
		"scope": map[string]any{"allowed_paths": []string{"deploy/app.yaml", "src/**"}, "allowed_tools": []string{"ts__wipe"}, "max_files_changed": 5}})
	h.model.push(sid, calls(wide), text("I cannot plan that"))
	h.say("main", "local", "change the deploy")
	mustContain(t, toolContent(t, h, wide.ID), "the plan was not posted",
		`scope.allowed_paths entry "deploy/app.yaml" lies inside "deploy/**", which the operator forbids to every plan (plan_mode.boundary.forbidden_paths)`,
		`scope.allowed_tools entry "ts__wipe" is a tool the operator forbids`,
		"scope.max_files_changed is 5, more than the operator's limit of 2 (plan_mode.boundary.max_files_changed)")
	if s := h.session("main"); s.PlanID != "" || s.Phase != core.PhasePlanning {
		t.Fatalf("a widening proposal was stored: phase %s, plan %q", s.Phase, s.PlanID)
	}
	reqs := h.model.requests()
	mustContain(t, reqs[0].System, "Operator limits for every plan (plan_mode.boundary; a plan past them is refused): never deploy/**; never the tools ts__wipe; at most 2 files.")

	// Inside it: the whole workspace, no budget of its own.
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{"title": "Tidy", "plan": []stepArg{{Step: "Tidy the files"}},
		"scope": map[string]any{"allowed_paths": []string{"**"}}})))
	card := lastText(h.say("main", "local", "tidy instead"))
	mustContain(t, card, "Budget: may change at most 2 files", "Operator limits: never deploy/**; never the tools ts__wipe; at most 2 files")
	p := h.plan(h.session("main").PlanID)
	if sc := p.Body.Scope; !slices.Equal(sc.ForbiddenPaths, []string{"deploy/**"}) || sc.MaxFilesChanged != 2 || sc.Operator == nil || sc.Operator.MaxFilesChanged != 2 {
		t.Fatalf("the stored scope %+v does not carry the boundary", sc)
	}
	if p.Hash != plan.Hash(p.Body) {
		t.Fatal("the stored hash does not cover the inherited scope")
	}
	file, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "Forbidden:\n\n- `deploy/**`\n", "Operator limits: never deploy/\\*\\*; never the tools ts\\_\\_wipe; at most 2 files (plan_mode.boundary, for every plan)")

	h.model.push(sid,
		writeCall("deploy/app.yaml", "replicas: 9\n"),
	)
	r := joinTexts(h.say("main", "local", "/plan accept"))
	mustContain(t, r, "Stopped:")
	stoppedWith(t, h, "main", p.ID, plan.StopForbiddenPath)
	if h.exists("main", "deploy/app.yaml") {
		t.Fatal("deploy/app.yaml was written under a forbidden path")
	}
	doc, err := os.ReadFile(filepath.Join(h.wsDir("main"), "PLAN.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Scope struct {
			OperatorLimits *plan.Boundary `json:"operator_limits"`
		} `json:"scope"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || d.Scope.OperatorLimits == nil || d.Scope.OperatorLimits.MaxFilesChanged != 2 ||
		!slices.Equal(d.Scope.OperatorLimits.ForbiddenPaths, []string{"deploy/**"}) {
		t.Fatalf("PLAN.json's scope.operator_limits: %+v (%v)", d.Scope.OperatorLimits, err)
	}

	// The inherited budget holds: the third file is refused and never written.
	h.model.push(sid, writeCall("a.txt", "a\n"), writeCall("b.txt", "b\n"), writeCall("c.txt", "c\n"))
	r = joinTexts(h.say("main", "local", "go on with the other files"))
	mustContain(t, r, "plan v1 allows 2 (scope.max_files_changed)")
	if got := h.plan(p.ID); got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopMaxFilesChanged {
		t.Fatalf("run %+v, want a max_files_changed_exceeded stop", got.Run.Stop)
	}
	if !h.exists("main", "a.txt") || !h.exists("main", "b.txt") {
		t.Fatal("the writes inside the budget did not land")
	}
	h.model.push(sid, writeCall("d.txt", "d\n"))
	h.say("main", "local", "and one more")
	if h.exists("main", "d.txt") {
		t.Fatal("a write after the budget's stop landed")
	}
}

// A person's edited plan file cannot widen the boundary either: a budget above the
// operator's is refused and stores nothing; a file that drops the inherited forbidden path
// is taken, and the new version carries the path again.
func TestBoundaryHoldsOverAnEditedFile(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) {
		c.Boundary = plan.Boundary{ForbiddenPaths: []string{"deploy/**"}, MaxFilesChanged: 2}
	})
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{"title": "Tidy", "plan": []stepArg{{Step: "Tidy the files"}},
		"scope": map[string]any{"allowed_paths": []string{"**"}}})))
	h.say("main", "local", "tidy")
	file := editedCopy(t, h, "main", "")
	if !strings.Contains(string(file.Data), "May change at most 2 files.") || !strings.Contains(string(file.Data), "- `deploy/**`\n") {
		t.Fatalf("the plan file does not show the inherited scope:\n%s", file.Data)
	}
	plans := len(h.plans("main"))
	over := file
	over.Data = []byte(strings.Replace(string(file.Data), "May change at most 2 files.", "May change at most 9 files.", 1))
	r := joinTexts(h.sayFiles("main", "local", "/plan edit", over))
	mustContain(t, r, "The edited file was not taken", "scope.max_files_changed is 9, more than the operator's limit of 2", "Nothing changed.")
	if n := len(h.plans("main")); n != plans {
		t.Fatalf("%d plans after a widening edit, want %d", n, plans)
	}

	dropped := file
	dropped.Data = []byte(strings.Replace(string(file.Data), "Forbidden:\n\n- `deploy/**`\n", "", 1))
	h.sayFiles("main", "local", "/plan edit", dropped)
	p := h.plan(h.session("main").PlanID)
	if p.Version != 2 || !slices.Equal(p.Body.Scope.ForbiddenPaths, []string{"deploy/**"}) || p.Body.Scope.Operator == nil {
		t.Fatalf("v%d's scope %+v: the edit dropped the operator's forbidden path", p.Version, p.Body.Scope)
	}
}

// A plan's checks are commands, which cannot honour a forbidden path: a check the approver
// read as "sh check.sh" runs the script the agent wrote afterwards, and what it writes into
// the operator's forbidden deploy/** is not taken as plangate's own. The update that
// would finish the plan is refused, the turn stops as forbidden_path (recorded on the plan
// and audited), and the plan stays open.
func TestBoundaryHoldsOverAPlansChecks(t *testing.T) {
	h := checkedHarness(t, func(c *engine.Config) {
		c.Boundary = plan.Boundary{ForbiddenPaths: []string{"deploy/**"}, RequireVerification: true}
	})
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{"title": "Status", "plan": []stepArg{{Step: "Write status.txt"}},
		"verification": []any{map[string]any{"name": "status written", "argv": []string{"sh", "check.sh"}}},
		"scope":        map[string]any{"allowed_paths": []string{"status.txt", "check.sh"}}})))
	if rs := h.say("main", "local", "plan it"); h.session("main").Phase != core.PhaseAwaitingApproval {
		t.Fatalf("not proposed:\n%s\n%q", joinTexts(rs), toolResults(t, h, "main", "exit_plan_mode"))
	}
	p := h.plan(h.session("main").PlanID)
	h.model.push(sid, calls(call("write_file", map[string]any{"path": "status.txt", "content": "ok\n"}),
		call("write_file", map[string]any{"path": "check.sh", "content": "mkdir -p deploy && echo 'replicas: 0' > deploy/app.yaml\n"})),
		calls(update(stepArg{Step: "Write status.txt", Status: "completed"})), text("done"))
	r := joinTexts(h.say("main", "local", "/plan accept"))
	mustContain(t, r, "Stopped: plan v1's verification changed deploy/app.yaml, which its scope forbids (deploy/**)")
	stoppedWith(t, h, "main", p.ID, plan.StopForbiddenPath)
	if got := h.plan(p.ID); got.Status != core.PlanAccepted {
		t.Fatalf("plan %s, want still accepted (open)", got.Status)
	}
}
