package engine_test

import (
	"fmt"
	"testing"

	"github.com/plangate/plangate/core"
)

// The checklist is one message edited in place, also after a restart: its platform id is
// kept in the store, not only in the process that posted it.
func TestProgressEditsInPlaceAfterRestart(t *testing.T) {
	h := newHarness(t)
	h.toExecuting("a", "Two steps")
	h.model.push(sessionID("a"), calls(update(stepArg{Step: "First step", Status: "completed"})), text("One done."))
	h.say("a", "local", "continue")
	first := progressReplies(h.out.all())
	if len(first) == 0 {
		t.Fatalf("no checklist before the restart; replies:\n%s", joinTexts(h.out.all()))
	}
	firstID := ""
	for i, r := range h.out.all() {
		if r.Kind == core.ReplyProgress && r.ReplaceID == "" {
			firstID = fmt.Sprintf("m%d", i+1) // the recorder's ids
		}
	}
	if firstID == "" {
		t.Fatalf("no new checklist message: %+v", first)
	}
	n := h.out.count()
	h.restart()
	h.model.push(sessionID("a"), calls(update(stepArg{Step: "Second step", Status: "completed"})), text("Both done."))
	h.say("a", "local", "continue")
	after := progressReplies(h.out.since(n))
	if len(after) == 0 {
		t.Fatalf("no checklist after the restart; replies:\n%s", joinTexts(h.out.since(n)))
	}
	for _, r := range after {
		if r.ReplaceID != firstID {
			t.Errorf("checklist after the restart replaces %q, want the first message %q", r.ReplaceID, firstID)
		}
	}
}

func progressReplies(rs []core.Reply) []core.Reply {
	var out []core.Reply
	for _, r := range rs {
		if r.Kind == core.ReplyProgress {
			out = append(out, r)
		}
	}
	return out
}
