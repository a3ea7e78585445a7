package core_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/tools"
)

// TestGateWithRealTools uses the real workspace tools: while planning, write_file and
// run_command change nothing on disk; after accept, the same calls work, within scope only.
func TestGateWithRealTools(t *testing.T) {
	if _, err := exec.LookPath("touch"); err != nil {
		t.Skip("no touch program")
	}
	h := newHarness(t)
	cfg := tools.Config{RunCommand: true, Allow: []string{"touch"}}
	if tools.CheckSandbox("", false) != nil && os.Getenv("CI") != "true" {
		cfg.Sandbox = tools.SandboxNone // a host without bwrap; CI has it
	}
	h.tools = tools.New(cfg)
	h.open()
	sid := sessionID("main")
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	write := func(p, content string) core.ToolCall {
		return call("write_file", map[string]any{"path": p, "content": content})
	}
	run := call("run_command", map[string]any{"argv": []string{"touch", "made-by-command"}})

	h.say("main", "local", "/plan on")
	h.model.push(sid,
		calls(write("README.md", "changed too early"), run),
		calls(call("exit_plan_mode", map[string]any{
			"title": "Readme", "plan": []stepArg{{Step: "Edit"}},
			"scope": map[string]any{"allowed_paths": []string{"README.md"}},
		})))
	rs := h.say("main", "local", "go")
	mustContain(t, joinTexts(rs), "Blocked write_file on README.md")
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Fatalf("the workspace changed while planning: %v", entries)
	}

	h.model.push(sid, calls(write("README.md", "# Hello\n")), calls(run))
	rs = h.say("main", "local", "/plan accept")
	if b, err := os.ReadFile(filepath.Join(ws, "README.md")); err != nil || string(b) != "# Hello\n" {
		t.Fatalf("README after accept: %q, %v", b, err)
	}
	mustContain(t, lastText(rs), "Stopped:", "run_command", "does not cover the whole workspace")
	if _, err := os.Stat(filepath.Join(ws, "made-by-command")); err == nil {
		t.Fatal("run_command ran although the plan's scope does not cover it")
	}

	// A plan whose scope is the whole workspace lets the allowed command run.
	h.say("main", "local", "/plan off")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{
		"title": "Touch", "plan": []stepArg{{Step: "Touch a file"}},
		"scope": map[string]any{"allowed_paths": []string{"**"}},
	})))
	h.say("main", "local", "plan the touch")
	h.model.push(sid, calls(run))
	h.say("main", "local", "/plan accept")
	if _, err := os.Stat(filepath.Join(ws, "made-by-command")); err != nil {
		t.Fatalf("run_command within scope did not run: %v", err)
	}
}
