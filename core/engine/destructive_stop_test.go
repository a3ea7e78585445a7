package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// A hostile model that asks for a destructive command under a plan whose scope allows
// commands: the command does not run (the repository's uncommitted change and the
// directory outside the workspace are still on disk), the turn stops as
// destructive_command_requested on the plan, audited; an ordinary command still runs.
func TestDestructiveCommandIsNotRun(t *testing.T) {
	for _, prog := range []string{"git", "rm"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("no %s program", prog)
		}
	}
	patterns, err := machine.ParseCommandPatterns(machine.DefaultDestructive)
	if err != nil {
		t.Fatal(err)
	}
	h := guardHarness(t, []string{"git", "rm"}, func(c *engine.Config) { c.Destructive = patterns })
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	sid := sessionID("main")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The work is there before the plan is proposed: a change after it would be drift.
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "init", "-q")
	gitIn(t, ws, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "start")
	if err := os.WriteFile(filepath.Join(ws, "work.txt"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "add", "work.txt")
	p := h.toExecutingAll("main", "Tidy")

	h.model.push(sid, calls(call("run_command", map[string]any{"argv": []string{"git", "reset", "--hard"}})))
	rs := h.say("main", "local", "clean up")
	mustContain(t, lastText(rs), `Stopped: run_command git reset --hard needs a person: it matches "git reset --hard" (tools.run_command.destructive), so it was not run.`)
	if b, err := os.ReadFile(filepath.Join(ws, "work.txt")); err != nil || string(b) != "uncommitted\n" {
		t.Fatalf("work.txt after the refused reset: %q, %v", b, err)
	}
	stoppedWith(t, h, "main", p.ID, plan.StopDestructiveCommand)
	rows := gateRows(t, h, "main")
	if last := rows[len(rows)-1]; last.Kind != engine.EventToolBlocked || last.Gate != engine.RuleDestructive || last.Tool != "run_command" {
		t.Fatalf("last gate row %+v, want run_command blocked by the destructive rule", last)
	}

	// rm -r outside the workspace: not run; inside it: runs.
	if err := os.MkdirAll(filepath.Join(ws, "build", "obj"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.model.push(sid, calls(call("run_command", map[string]any{"argv": []string{"rm", "-r", "build"}}),
		call("run_command", map[string]any{"argv": []string{"rm", "-rf", outside}})))
	rs = h.say("main", "local", "go on")
	mustContain(t, lastText(rs), `it matches "rm -r <outside>"`)
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("the directory outside the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); !os.IsNotExist(err) {
		t.Fatalf("rm -r build inside the workspace did not run: %v", err)
	}
	if got := h.plan(p.ID); got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopDestructiveCommand {
		t.Fatalf("stop %+v", got.Run.Stop)
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
