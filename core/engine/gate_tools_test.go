package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
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
	// Both refusals, in one notice, before the plan; each one an audit row.
	if len(rs) != 2 || rs[0].Kind != core.ReplyNotice || rs[1].Kind != core.ReplyPlan {
		t.Fatalf("replies %+v, want the notice of blocked calls, then the plan", rs)
	}
	mustContain(t, rs[0].Text, "Blocked 2 calls: nothing may change before a plan is accepted (phase: planning).",
		"- write_file on README.md", "- run_command touch made-by-command")
	if got := gateRows(t, h, "main"); len(got) != 2 || got[0].Tool != "write_file" || got[1].Tool != "run_command" ||
		got[0].Kind != engine.EventToolBlocked || got[1].Kind != engine.EventToolBlocked || got[0].Paths[0] != "README.md" ||
		got[0].PlanVersion != 0 {
		t.Fatalf("gate rows while planning: %+v", got)
	}
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
	// The write ran, the scope stop was refused; the stop has its own notice, not a second list.
	rows := gateRows(t, h, "main")[2:]
	if len(rows) != 2 || rows[0].Kind != engine.EventToolRan || rows[0].Outcome != "ok" || rows[0].Tool != "write_file" ||
		rows[1].Kind != engine.EventToolBlocked || rows[1].Tool != "run_command" || rows[1].Outcome != "refused" ||
		rows[0].PlanVersion != 1 || rows[1].PlanVersion != 1 {
		t.Fatalf("gate rows after accept: %+v", rows)
	}
	for _, r := range rs {
		if strings.HasPrefix(r.Text, "Blocked") {
			t.Fatalf("a scope stop was listed again: %q", r.Text)
		}
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
	rows = gateRows(t, h, "main")
	if last := rows[len(rows)-1]; last.Kind != engine.EventToolRan || last.Tool != "run_command" || last.Outcome != "ok" {
		t.Fatalf("last gate row %+v, want run_command ran", last)
	}

	// A call that ran and failed is recorded as failed, with why.
	h.model.push(sid, calls(call("edit_file", map[string]any{"path": "missing.md", "old": "a", "new": "b"})))
	h.say("main", "local", "edit it")
	rows = gateRows(t, h, "main")
	if last := rows[len(rows)-1]; last.Kind != engine.EventToolRan || last.Tool != "edit_file" || last.Outcome != "failed" ||
		last.Why == "" || len(last.Paths) != 1 || last.Paths[0] != "missing.md" {
		t.Fatalf("last gate row %+v, want edit_file failed", last)
	}
}

// gateRow is a tool_blocked or tool_ran audit row with its detail decoded.
type gateRow struct {
	Kind        core.EventKind
	PlanVersion int
	engine.ToolAudit
}

// gateRows lists the gate's audit rows of chat, oldest first.
func gateRows(t *testing.T, h *harness, chat string) []gateRow {
	t.Helper()
	evs, err := h.st.Events(context.Background(), sessionID(chat))
	if err != nil {
		t.Fatal(err)
	}
	var out []gateRow
	for _, e := range evs {
		if e.Kind != engine.EventToolBlocked && e.Kind != engine.EventToolRan {
			continue
		}
		r := gateRow{Kind: e.Kind, PlanVersion: e.PlanVersion}
		if err := json.Unmarshal([]byte(e.Detail), &r.ToolAudit); err != nil {
			t.Fatalf("detail of %s: %v (%q)", e.Kind, err, e.Detail)
		}
		if e.Actor != core.AgentActor {
			t.Fatalf("gate row by %v, want the agent", e.Actor)
		}
		out = append(out, r)
	}
	return out
}
