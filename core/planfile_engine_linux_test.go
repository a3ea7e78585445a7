//go:build linux

package core_test

import (
	"context"
	"os"
	"testing"

	"github.com/plangate/plangate/core"
)

// A plan's life through the engine creates a file for the proposal and one more for the
// first rewrite (there is no spare yet); every later rewrite — the steps, the completion —
// fills the file the one before it displaced.
func TestEnginePlanFileRewritesCreateNoFile(t *testing.T) {
	h := newHarness(t)
	p := h.toPending("main", "Docs")
	sid := h.session("main").ID
	h.model.push(sid,
		calls(update(stepArg{Step: "First step", Status: "in_progress"})),
		calls(update(stepArg{Step: "First step", Status: "completed"}, stepArg{Step: "Second step", Status: "in_progress"})),
		calls(update(stepArg{Step: "Second step", Status: "completed"})),
		text("done"))
	h.say("main", "local", "/plan accept")
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.plan(p.ID).Status; got != core.PlanCompleted {
		t.Fatalf("plan status %s, want completed", got)
	}
	written, created := core.PlanFileWrites(h.eng)
	if written < 3 || created != 2 {
		t.Errorf("%d plan file writes created %d files, want at least 3 writes and 2 files", written, created)
	}
	data, err := os.ReadFile(h.plan(p.ID).File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(data), "status: completed", "- [x] First step", "- [x] Second step")
}
