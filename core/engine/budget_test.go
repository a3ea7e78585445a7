package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/tools"
)

// budgetHarness is an engine with the real tools (run_command may start sh in sandbox sb,
// fingerprints keep baselines) and chat "main" executing a plan over the whole workspace
// with scope; the files are in its workspace before the proposal. exec is what the model
// does once the plan is accepted.
func budgetHarness(t *testing.T, sb string, scope map[string]any, files map[string]string, exec ...step) (*harness, core.Plan) {
	t.Helper()
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
	h.tools = tools.New(tools.Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: sb, ProtectPlanCopy: true,
		Baselines: filepath.Join(h.dir, "plans", ".plangate-baselines"), Hidden: []string{filepath.Join(h.dir, "plans")}})
	h.open()
	h.writeWS("main", files)
	h.say("main", "local", "/plan on")
	scope["allowed_paths"] = []string{"**"}
	h.model.push(sessionID("main"), calls(call("exit_plan_mode", map[string]any{"title": "Budgeted", "plan": []map[string]any{{"step": "Change files"}}, "scope": scope})))
	h.say("main", "local", "make a plan")
	s := h.session("main")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	h.model.push(sessionID("main"), exec...)
	return h, h.plan(s.PlanID)
}

func writeCall(path, content string) step {
	return calls(call("write_file", map[string]any{"path": path, "content": content}))
}

func (h *harness) exists(chat, rel string) bool {
	_, err := os.Lstat(filepath.Join(h.wsDir(chat), filepath.FromSlash(rel)))
	return err == nil
}

// A hostile agent under a plan that allows 2 files writes 3, the third through
// run_command: plangate counts it from the workspace, stops the turn with
// max_files_changed_exceeded, records the stop on the version and audits it, and refuses
// every further mutating call of that version.
func TestBudgetFilesExceededByHostileAgent(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			h, p := budgetHarness(t, sb, map[string]any{"max_files_changed": 2}, map[string]string{"a.txt": "a\n"},
				writeCall("a.txt", "a changed\n"),
				writeCall("b.txt", "new\n"),
				calls(call("run_command", map[string]any{"argv": []string{"sh", "-c", "echo sneaky > c.txt"}})),
				writeCall("d.txt", "never\n"))
			if got := joinTexts(h.out.all()); !strings.Contains(got, "Budget: may change at most 2 files") {
				t.Fatalf("the proposal does not show the budget:\n%s", got)
			}
			r := joinTexts(h.say("main", "local", "/plan accept"))
			mustContain(t, r, "Stopped: 3 files changed (a.txt, b.txt and c.txt), plan v1 allows 2 (scope.max_files_changed)", "/plan revise <feedback>")
			got := h.plan(p.ID)
			if got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopMaxFilesChanged {
				t.Fatalf("run %+v, want a max_files_changed_exceeded stop", got.Run.Stop)
			}
			if ch := got.Run.Changed; ch == nil || ch.Files != 3 || ch.Exceeded != plan.StopMaxFilesChanged || strings.Join(ch.Paths, " ") != "a.txt b.txt c.txt" {
				t.Fatalf("changed %+v", got.Run.Changed)
			}
			if len(h.eventsOf("main", core.EventStopped)) != 1 {
				t.Fatalf("stopped rows: %v", h.events("main"))
			}
			if h.exists("main", "d.txt") || !h.exists("main", "c.txt") {
				t.Fatal("d.txt was written after the stop, or c.txt is missing")
			}
			mustContain(t, lastText(h.say("main", "local", "/plan status")), "budget: 3 of 2 files changed so far — over it (max_files_changed_exceeded)")

			// Going on with the same version is refused.
			h.model.push(sessionID("main"), writeCall("d.txt", "still never\n"))
			mustContain(t, joinTexts(h.say("main", "local", "go on anyway")), "plan v1 already went over its budget (3 of 2 files changed)", "/plan revise")
			if h.exists("main", "d.txt") {
				t.Fatal("a call after the budget stop wrote d.txt")
			}
			if got := h.plan(p.ID); got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopMaxFilesChanged {
				t.Fatalf("run after the refusal %+v", got.Run.Stop)
			}
		})
	}
}

// Lines are counted as added plus removed, from the workspace the plan was accepted on.
func TestBudgetLinesExceeded(t *testing.T) {
	h, p := budgetHarness(t, tools.SandboxNone, map[string]any{"max_lines_changed": 4}, map[string]string{"a.txt": "1\n2\n3\n"},
		writeCall("a.txt", "1\ntwo\n3\n"), // 2 lines
		writeCall("b.txt", "x\ny\nz\n"))   // 3 more: 5 > 4
	mustContain(t, joinTexts(h.say("main", "local", "/plan accept")), "Stopped: 5 lines changed, plan v1 allows 4 (scope.max_lines_changed)")
	got := h.plan(p.ID)
	if got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopMaxLinesChanged || got.Run.Changed.Lines != 5 || got.Run.Changed.Files != 2 {
		t.Fatalf("run %+v / %+v", got.Run.Stop, got.Run.Changed)
	}
	mustContain(t, string(readFile(t, got.File)), "May change at most 4 lines.")
}

// Within the budget, the count shows in /plan status and nothing stops.
func TestBudgetWithinShowsInStatus(t *testing.T) {
	h, p := budgetHarness(t, tools.SandboxNone, map[string]any{"max_files_changed": 3, "max_lines_changed": 100}, map[string]string{"a.txt": "1\n"},
		writeCall("a.txt", "1\n2\n"), writeCall("b.txt", "x\n"), text("Working on it."))
	r := joinTexts(h.say("main", "local", "/plan accept"))
	if strings.Contains(r, "Stopped") {
		t.Fatalf("stopped within budget:\n%s", r)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "2 of 3 files, 2 of 100 lines changed so far")
	if got := h.plan(p.ID); got.Run.Stop != nil || got.Run.Changed == nil || got.Run.Changed.Exceeded != "" {
		t.Fatalf("run %+v", got.Run)
	}
}

// A change the agent did not make between its turns (a person edits a file) stops the
// next mutating call with workspace_drifted, before it runs; a person's go-ahead then
// continues from the workspace as it is.
func TestDriftBetweenTurnsStops(t *testing.T) {
	h, p := budgetHarness(t, tools.SandboxNone, map[string]any{}, map[string]string{"a.txt": "a\n", "b.txt": "b\n"},
		writeCall("a.txt", "a by the agent\n"), text("Step one done."))
	h.say("main", "local", "/plan accept")
	if got := h.plan(p.ID); got.Run.Changed == nil || got.Run.Changed.Files != 1 {
		t.Fatalf("after turn one: %+v", got.Run.Changed)
	}
	h.writeWS("main", map[string]string{"b.txt": "b edited by a person\n"})
	h.model.push(sessionID("main"), writeCall("c.txt", "c\n"))
	r := joinTexts(h.say("main", "local", "next step please"))
	mustContain(t, r, "Stopped: the workspace changed outside my calls since my last change (b.txt changed)", "write_file on c.txt was not run")
	got := h.plan(p.ID)
	if got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopWorkspaceDrifted {
		t.Fatalf("run %+v, want a workspace_drifted stop", got.Run.Stop)
	}
	if h.exists("main", "c.txt") {
		t.Fatal("the call after the drift ran")
	}
	if ev := h.eventsOf("main", core.EventStopped); len(ev) != 1 || !strings.HasPrefix(ev[0].Detail, "workspace_drifted: ") {
		t.Fatalf("stopped rows %+v", ev)
	}
	h.model.push(sessionID("main"), writeCall("c.txt", "c\n"), text("Done."))
	if r := joinTexts(h.say("main", "local", "I changed b.txt, go on")); strings.Contains(r, "Stopped") {
		t.Fatalf("stopped again after the go-ahead:\n%s", r)
	}
	if !h.exists("main", "c.txt") {
		t.Fatal("c.txt was not written after the go-ahead")
	}
}

// withoutFingerprints hides a toolbox's fingerprints: its plans are not bound to the workspace.
type withoutFingerprints struct{ core.Toolbox }
