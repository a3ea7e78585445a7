package core_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// TestPlannerStyleInSystemPrompt: the configured planner reaches the model as the
// plan-mode card's style and short-goal lines; the zero planner adds neither.
func TestPlannerStyleInSystemPrompt(t *testing.T) {
	for _, tc := range []struct {
		planner   core.Planner
		want, not []string
	}{
		{core.Planner{Style: core.StyleAmbitious, ExpandShortGoals: true},
			[]string{"Style: ambitious.", "name the opportunities", "plan a product spec first", `"spec"`}, []string{"Style: conservative."}},
		{core.Planner{Style: core.StyleConservative},
			[]string{"Style: conservative.", "no new dependencies"}, []string{"product spec", "Style: ambitious."}},
		{core.Planner{}, []string{"PLAN MODE"}, []string{"Style:", "product spec"}},
	} {
		h := newHarness(t, func(c *core.Config) { c.Planner = tc.planner })
		h.say("main", "local", "/plan on a todo app")
		reqs := h.model.requests()
		if len(reqs) == 0 {
			t.Fatal("the model was not called")
		}
		sys := reqs[0].System
		mustContain(t, sys, tc.want...)
		for _, n := range tc.not {
			if strings.Contains(sys, n) {
				t.Errorf("planner %+v: the prompt has %q", tc.planner, n)
			}
		}
	}
}

// specArgs is an exit_plan_mode call for a short goal expanded into a product spec.
func specArgs(spec map[string]any) map[string]any {
	return map[string]any{"title": "Todo app", "summary": "A small todo web app.",
		"plan":  []stepArg{{Step: "Scaffold the app", AcceptanceCriteria: []string{"index.html opens"}}, {Step: "Add todos"}},
		"scope": map[string]any{"allowed_paths": []string{"app/**"}}, "spec": spec}
}

func goodSpec() map[string]any {
	return map[string]any{
		"overview": "A todo list for one person.\n\nIt runs in the browser.",
		"features": []map[string]string{{"name": "Add a todo", "priority": "high", "complexity": "small"},
			{"name": "Due dates (optional)", "priority": "low", "complexity": "medium"}},
		"user_stories":     []string{"As a user I add a todo so that I remember it"},
		"tech_stack":       []string{"HTML", "vanilla JS"},
		"design_direction": "Plain, one column, large type."}
}

// TestExpandedSpecPlan: a proposal with a spec is posted with the spec in its file (as
// sections plan.ParseMarkdown reads back), stored, and carried into PLAN.json on accept.
func TestExpandedSpecPlan(t *testing.T) {
	h := newHarness(t, func(c *core.Config) {
		c.Planner = core.Planner{Style: core.StyleAmbitious, ExpandShortGoals: true}
		c.WorkspaceCopy = true
	})
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", specArgs(goodSpec()))))
	h.say("main", "local", "Build me a todo app.")
	s := h.session("main")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("phase %s; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	p := h.plan(s.PlanID)
	file := string(readFile(t, p.File))
	mustContain(t, file, "## Product spec", "### Overview\n\nA todo list for one person.\n\nIt runs in the browser.",
		"### Features\n\n- Add a todo (priority: high, complexity: small)\n- Due dates (optional) (priority: low, complexity: medium)",
		"### User stories", "### Tech stack\n\n- HTML\n- vanilla JS", "### Design direction")
	if i, j := strings.Index(file, "## Product spec"), strings.Index(file, "## Steps"); i < 0 || j < i {
		t.Errorf("the spec is not before the steps:\n%s", file)
	}
	back, err := plan.ParseMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec == nil || back.Spec.Features[1] != p.Body.Spec.Features[1] || back.Spec.Overview != p.Body.Spec.Overview {
		t.Fatalf("the spec read back as %+v, stored %+v", back.Spec, p.Body.Spec)
	}
	h.say("main", "local", "/plan accept")
	var doc core.PlanDocument
	if err := json.Unmarshal(readFile(t, filepath.Join(h.cfg.WorkspaceRoot, "main", core.PlanCopyJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Spec == nil || len(doc.Spec.Features) != 2 || doc.Spec.Features[0].Priority != "high" || doc.Spec.TechStack[1] != "vanilla JS" {
		t.Fatalf("PLAN.json spec: %+v", doc.Spec)
	}
}

// TestHostileSpecRefused: a spec with a wrong priority or complexity, control characters,
// too many entries or an oversized text is a tool error naming each problem, and no plan is
// posted; the model can correct it and propose again.
func TestHostileSpecRefused(t *testing.T) {
	many := make([]map[string]string, 51)
	for i := range many {
		many[i] = map[string]string{"name": "f" + strings.Repeat("x", i), "priority": "high", "complexity": "small"}
	}
	stories := make([]string, 60)
	for i := range stories {
		stories[i] = "story"
	}
	for name, tc := range map[string]struct {
		mutate func(sp map[string]any)
		want   []string
	}{
		"priority": {func(sp map[string]any) {
			sp["features"] = []map[string]string{{"name": "Add", "priority": "urgent", "complexity": "tiny"}}
		}, []string{`spec.features[0].priority is "urgent"; use one of high, medium, low`, `spec.features[0].complexity is "tiny"; use one of small, medium, large`}},
		"control chars": {func(sp map[string]any) {
			sp["features"] = []map[string]string{{"name": "Add \x1b[31mred\x1b[0m", "priority": "high", "complexity": "small"}}
			sp["tech_stack"] = []string{"Go\u202e"}
		}, []string{"spec.features[0].name", "spec.tech_stack entry 1"}},
		"huge lists": {func(sp map[string]any) { sp["features"], sp["user_stories"] = many, stories },
			[]string{"there are 51 spec.features; at most 50", "there are 60 spec.user_stories; at most 50"}},
		"huge text": {func(sp map[string]any) { sp["overview"] = strings.Repeat("long ", 1000) },
			[]string{"spec.overview is 4999 characters long; keep it to at most 2000"}},
		"empty": {func(sp map[string]any) { delete(sp, "overview"); delete(sp, "features") },
			[]string{"spec.overview is empty", "spec.features is empty"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			sid := sessionID("main")
			h.say("main", "local", "/plan on")
			sp := goodSpec()
			tc.mutate(sp)
			bad := call("exit_plan_mode", specArgs(sp))
			h.model.push(sid, calls(bad), text("I will fix the spec."))
			h.say("main", "local", "Build me a todo app.")
			if s := h.session("main"); s.Phase != core.PhasePlanning || len(h.plans("main")) != 0 {
				t.Fatalf("a hostile spec was posted: phase %s, %d plans", s.Phase, len(h.plans("main")))
			}
			got := toolContent(t, h, bad.ID)
			mustContain(t, got, append([]string{"error: the plan was not posted; fix these problems"}, tc.want...)...)
		})
	}
}

// TestSpecLineInProposal: the proposal's chat message names the spec's features, at most
// five, so the person sees what is being built before opening the file.
func TestSpecLineInProposal(t *testing.T) {
	h := newHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	sp := goodSpec()
	var fs []map[string]string
	for _, n := range []string{"One", "Two", "Three", "Four", "Five", "Six"} {
		fs = append(fs, map[string]string{"name": n, "priority": "medium", "complexity": "large"})
	}
	sp["features"] = fs
	h.model.push(sid, calls(call("exit_plan_mode", specArgs(sp))))
	rs := h.say("main", "local", "Build me a todo app.")
	mustContain(t, joinTexts(rs), "\nProduct spec: 6 features — One (medium, large) · Two (medium, large) · Three (medium, large) · Four (medium, large) · Five (medium, large) · …\nMay change: app/**")
}
