package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
)

// agent.max_same_failure: with a threshold of 2 a hostile model that repeats a failing
// edit is stopped at the second failure (repeated_same_failure on the plan, audited; the
// third call never runs); with the default of 3 the second failure is not a stop.
func TestSameFailureThresholdIsConfigurable(t *testing.T) {
	failing := func() step {
		return calls(call("edit_file", map[string]any{"path": "missing.md", "old": "a", "new": "b"}))
	}
	third := call("write_file", map[string]any{"path": "third.txt", "content": "ran\n"})

	h := guardHarness(t, nil, func(c *engine.Config) { c.MaxSameFailure = 2 })
	p := h.toExecutingAll("main", "Edit")
	sid := sessionID("main")
	h.model.push(sid, failing(), failing(), calls(third))
	rs := h.say("main", "local", "go on")
	mustContain(t, lastText(rs), "Stopped: the same tool error happened twice in a row", "missing.md", "Send a message")
	stoppedWith(t, h, "main", p.ID, plan.StopRepeatedFailure)
	if _, err := os.Stat(filepath.Join(h.cfg.WorkspaceRoot, "main", "third.txt")); err == nil {
		t.Fatal("the turn went on after the stop")
	}

	h3 := guardHarness(t, nil) // the default
	p3 := h3.toExecutingAll("main", "Edit")
	h3.model.push(sid, failing(), failing(), calls(third), text("done"))
	rs = h3.say("main", "local", "go on")
	if strings.Contains(joinTexts(rs), "Stopped:") {
		t.Fatalf("two failures stopped the turn under the default threshold:\n%s", joinTexts(rs))
	}
	if b, err := os.ReadFile(filepath.Join(h3.cfg.WorkspaceRoot, "main", "third.txt")); err != nil || string(b) != "ran\n" {
		t.Fatalf("third.txt: %q, %v", b, err)
	}
	if got := h3.plan(p3.ID); got.Run.Stop != nil {
		t.Fatalf("a stop was recorded: %+v", got.Run.Stop)
	}
}
