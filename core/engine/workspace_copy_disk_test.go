package engine_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/tools"
)

const copyRefusal = "is the approved plan, the person's contract; it cannot be changed"

// copyHarness is an engine with workspace_copy on and the real tools protecting the
// copy; run_command may start sh, in the sandbox named.
func copyHarness(t *testing.T, sandbox string) (*harness, string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
	h.tools = tools.New(tools.Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: sandbox, ProtectPlanCopy: true})
	h.open()
	return h, filepath.Join(h.cfg.WorkspaceRoot, "main")
}

// sandboxes are the run_command modes this host can test: none always, bwrap where it
// can start (CI has it).
func sandboxes(t *testing.T) []string {
	modes := []string{tools.SandboxNone}
	if tools.CheckSandbox("", false) == nil {
		modes = append(modes, tools.SandboxBwrap)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI must be able to start bwrap")
	}
	return modes
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPlanCopyRefusedToHostileAgent: once a plan is accepted, PLAN.md and PLAN.json are in
// the workspace; a model that tries to overwrite, edit, rename the case, go through a
// symlink or a hard link, or run a command that writes and deletes them gets tool errors,
// and the bytes on disk are exactly what plangate wrote. Step progress then rewrites them.
func TestPlanCopyRefusedToHostileAgent(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			h, ws := copyHarness(t, sb)
			// The hook below makes links between the agent's calls, which the drift check
			// would stop at (budget_test.go tests that); here only the copy's protection counts.
			h.tools = withoutFingerprints{h.tools}
			h.open()
			sid := sessionID("main")
			h.say("main", "local", "/plan on")
			h.model.push(sid, calls(call("exit_plan_mode", map[string]any{
				"title": "Notes", "plan": []stepArg{{Step: "Write notes", AcceptanceCriteria: []string{"notes.md exists"}}, {Step: "Review"}},
				"scope": map[string]any{"allowed_paths": []string{"**"}}})))
			h.say("main", "local", "write notes")
			if _, err := os.Lstat(filepath.Join(ws, core.PlanCopyMarkdown)); err == nil {
				t.Fatal("PLAN.md exists before the plan was accepted")
			}

			write := func(p string) core.ToolCall {
				return call("write_file", map[string]any{"path": p, "content": "the agent's own plan"})
			}
			edit := func(p string) core.ToolCall {
				return call("edit_file", map[string]any{"path": p, "old": "Write notes", "new": "Do nothing"})
			}
			sh := func(script string) core.ToolCall {
				return call("run_command", map[string]any{"argv": []string{"sh", "-c", script}})
			}
			// Set before the calls run: links the tools could not make themselves.
			h.model.Hook(func(req core.ModelRequest) {
				if req.SessionID == sid {
					_ = os.Symlink(core.PlanCopyMarkdown, filepath.Join(ws, "alias.md"))
					_ = os.Link(filepath.Join(ws, core.PlanCopyJSON), filepath.Join(ws, "hard.json"))
				}
			})
			hostile := []core.ToolCall{write("PLAN.md"), write("plan.md"), write("./PLAN.json"), edit("PLAN.md"),
				write("alias.md"), edit("hard.json"),
				sh("echo replaced > PLAN.md; echo '{}' > PLAN.json; rm -f PLAN.md; mv PLAN.json moved.json"),
				write("notes.md")}
			h.model.push(sid, calls(hostile...), text("done trying"))
			h.say("main", "local", "/plan accept")
			h.model.Hook(nil)

			md, js := readFile(t, filepath.Join(ws, core.PlanCopyMarkdown)), readFile(t, filepath.Join(ws, core.PlanCopyJSON))
			p := h.plans("main")[0]
			want := machine.RenderPlanMarkdown(p, core.PhaseExecuting, "main", machine.Reach{})
			if string(md) != string(want) {
				t.Fatalf("PLAN.md changed:\n%s\nwant:\n%s", md, want)
			}
			// The token counts are as of the copy's last write (the plan's changes), before
			// the turn's last call: only the plan's own content is compared.
			var written engine.PlanDocument
			if err := json.Unmarshal(js, &written); err != nil {
				t.Fatal(err)
			}
			p.Tokens = written.Tokens
			wantJS, _ := engine.RenderPlanJSON(h.session("main"), p)
			if string(js) != string(wantJS) {
				t.Fatalf("PLAN.json changed:\n%s\nwant:\n%s", js, wantJS)
			}
			for i, c := range hostile[:6] {
				if got := toolContent(t, h, c.ID); !strings.Contains(got, copyRefusal) {
					t.Errorf("call %d (%s %s): %q, want the contract refusal", i, c.Name, c.Args, got)
				}
			}
			mustContain(t, toolContent(t, h, hostile[0].ID), "PLAN.md "+copyRefusal)
			mustContain(t, toolContent(t, h, hostile[5].ID), "PLAN.json "+copyRefusal)
			if got := toolContent(t, h, hostile[6].ID); sb == tools.SandboxNone {
				mustContain(t, got, "PLAN.md "+copyRefusal+": the command changed it, and it was put back.",
					"PLAN.json "+copyRefusal+": the command changed it, and it was put back.")
			} else if !strings.Contains(got, "Read-only file system") && !strings.Contains(got, "busy") {
				t.Errorf("run_command under bwrap: %q, want the writes to fail", got)
			}
			if got := readFile(t, filepath.Join(ws, "notes.md")); string(got) != "the agent's own plan" {
				t.Errorf("an ordinary write in scope did not run: %q", got)
			}

			// Progress rewrites the copy: the step is shown in progress in both files.
			h.model.push(sid, calls(update(stepArg{Step: "Write notes", Status: "in_progress"})), text("working"))
			h.say("main", "local", "go on")
			mustContain(t, string(readFile(t, filepath.Join(ws, core.PlanCopyMarkdown))), "- [>] Write notes")
			var doc engine.PlanDocument
			if err := json.Unmarshal(readFile(t, filepath.Join(ws, core.PlanCopyJSON)), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Steps[0].Status != plan.StepInProgress || doc.Status != core.PlanAccepted || doc.Decision == nil || doc.Decision.Outcome != "accepted" {
				t.Fatalf("PLAN.json after progress: %+v", doc)
			}
		})
	}
}

// TestPlanCopySeedsWorkspace: a plan accepted before any tool ran still gets a seeded
// workspace (the copy does not create an empty one first), and /plan off shows the
// aborted status in the copy.
func TestPlanCopySeedsWorkspace(t *testing.T) {
	seed := t.TempDir()
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# seeded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
	h.tools = tools.New(tools.Config{Seed: seed, ProtectPlanCopy: true})
	h.open()
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	h.toExecuting("main", "Seeded")
	if got := readFile(t, filepath.Join(ws, "README.md")); string(got) != "# seeded\n" {
		t.Fatalf("README.md = %q: the workspace was not seeded", got)
	}
	mustContain(t, string(readFile(t, filepath.Join(ws, core.PlanCopyMarkdown))), "# Seeded", "status: accepted")
	h.say("main", "local", "/plan off")
	mustContain(t, string(readFile(t, filepath.Join(ws, core.PlanCopyMarkdown))), "status: aborted")
}

// TestPlanCopyOff: with workspace_copy off nothing is written, and a toolbox that does
// not protect the names lets the workspace's own PLAN.md be edited.
func TestPlanCopyOff(t *testing.T) {
	h := newHarness(t)
	h.tools = tools.New(tools.Config{})
	h.open()
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{"title": "Own plan file", "plan": []stepArg{{Step: "Edit it"}},
		"scope": map[string]any{"allowed_paths": []string{"PLAN.md"}}})))
	h.say("main", "local", "plan it")
	h.model.push(sid, calls(call("write_file", map[string]any{"path": "PLAN.md", "content": "mine"})), text("ok"))
	h.say("main", "local", "/plan accept")
	if got := readFile(t, filepath.Join(ws, "PLAN.md")); string(got) != "mine" {
		t.Fatalf("PLAN.md = %q; with the copy off it is the workspace's own file", got)
	}
	if _, err := os.Stat(filepath.Join(ws, core.PlanCopyJSON)); err == nil {
		t.Fatal("PLAN.json written with workspace_copy off")
	}
}
