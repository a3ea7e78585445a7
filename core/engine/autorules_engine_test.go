package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
)

// proposeScoped is an exit_plan_mode call with steps and allowed paths.
func proposeScoped(title string, paths []string, steps ...string) core.ToolCall {
	var ss []stepArg
	for _, s := range steps {
		ss = append(ss, stepArg{Step: s})
	}
	return call("exit_plan_mode", map[string]any{"title": title, "summary": "Summary of " + title, "plan": ss,
		"scope": map[string]any{"allowed_paths": paths}})
}

func docsRule(c *engine.Config) {
	c.AutoApproveRules = []machine.ApproveRule{{Name: "docs-only", Paths: []string{"docs/**", "*.md"}, MaxSteps: 6}}
}

func TestAutoApproveRuleAcceptsDocsOnly(t *testing.T) {
	h := newHarness(t, docsRule)
	h.say("docs", "local", "/plan on")
	h.model.push(sessionID("docs"), calls(proposeScoped("Docs", []string{"docs/**", "README.md"}, "Reword the intro", "Fix links")))
	got := joinTexts(h.say("docs", "local", "tidy the docs"))
	mustContain(t, got, "Auto-approved by rule docs-only: 2 steps, every path under docs/** or *.md. Working on it.")
	s := h.session("docs")
	if s.Phase != core.PhaseExecuting {
		t.Fatalf("phase %s, want executing", s.Phase)
	}
	p := h.plan(s.PlanID)
	if p.Status != core.PlanAccepted || p.Decision == nil || p.Decision.By != "docs-only" || p.Decision.Outcome != "auto_accepted" {
		t.Fatalf("plan %s, decision %+v", p.Status, p.Decision)
	}
	evs, err := h.st.Events(context.Background(), sessionID("docs"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Kind == core.EventAutoAccepted {
			found = e.Actor.String() == "rule:docs-only" && e.Detail == "rule docs-only: 2 steps, every path under docs/** or *.md"
			if !found {
				t.Errorf("auto_accepted row: actor %s, detail %q", e.Actor, e.Detail)
			}
		}
	}
	if !found {
		t.Fatalf("no auto_accepted row naming the rule: %v", h.events("docs"))
	}
}

func TestAutoApproveRuleRefusesSrcAndUnscoped(t *testing.T) {
	h := newHarness(t, docsRule)
	h.say("src", "local", "/plan on")
	h.model.push(sessionID("src"), calls(proposeScoped("Code", []string{"docs/**", "src/**"}, "Change the code", "Document it")))
	got := joinTexts(h.say("src", "local", "fix the bug"))
	mustContain(t, got, "No auto-approve rule covers this plan, so a person decides: /plan accept")
	if s := h.session("src"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("a plan touching src/: phase %s, want awaiting_approval", s.Phase)
	}
	// A plan without a scope never matches.
	h.say("bare", "local", "/plan on")
	h.model.push(sessionID("bare"), calls(propose("Docs", "Reword the intro")))
	h.say("bare", "local", "tidy")
	if s := h.session("bare"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("a plan without scope: phase %s, want awaiting_approval", s.Phase)
	}
	// More steps than the rule allows.
	h.say("long", "local", "/plan on")
	h.model.push(sessionID("long"), calls(proposeScoped("Docs", []string{"docs/**"}, "a", "b", "c", "d", "e", "f", "g")))
	h.say("long", "local", "tidy")
	if s := h.session("long"); s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("seven steps under a six-step rule: phase %s, want awaiting_approval", s.Phase)
	}
}

// Every version after the first says what changed, in its file and in its chat message.
func TestRevisedVersionRecordsChanges(t *testing.T) {
	h := newHarness(t)
	h.toPending("c", "Docs")
	h.model.push(sessionID("c"), calls(propose("Docs", "First step slightly reworded", "Write the changelog")))
	got := joinTexts(h.say("c", "local", "/plan revise change it"))
	mustContain(t, got, "Changes from v1: + Write the changelog · ~ First step slightly reworded · − Second step")
	s := h.session("c")
	v2 := h.plan(s.PlanID)
	want := "\n## Changes from v1\n\n- Added: Write the changelog\n- Reworded: First step → First step slightly reworded\n- Removed: Second step\n"
	h.accept(t, "c")
	_ = h.eng.Wait(context.Background()) // the refreshed file is written in the background
	data, err := os.ReadFile(v2.File)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), want) || !strings.Contains(string(data), "status: accepted") {
		t.Errorf("v2's file after acceptance:\n%s\nwant the status and\n%s", data, want)
	}
	v1 := h.plans("c")[0]
	if data, err := os.ReadFile(v1.File); err != nil || strings.Contains(string(data), "Changes from") {
		t.Errorf("v1's file has a changes section (or is unreadable: %v):\n%s", err, data)
	}
}

func (h *harness) accept(t *testing.T, chat string) {
	t.Helper()
	h.say(chat, "local", "/plan accept")
	if s := h.session(chat); s.Phase != core.PhaseExecuting {
		t.Fatalf("accept: phase %s", s.Phase)
	}
}
