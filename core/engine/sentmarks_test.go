package engine_test

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
)

// A delivered reply is marked sent as it is delivered, so no mark waits for the model:
// the replies of a decision are marked before the turn it starts asks the model, and a
// job's last replies before the job is done.
func TestSentMarksDoNotWaitForTheModel(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.toPending("c", "Marks")
	unsent := func() int {
		rows, err := h.st.UnsentOutbox(ctx, nil, 0)
		if err != nil {
			t.Error(err)
		}
		return len(rows)
	}
	if n := unsent(); n != 0 {
		t.Fatalf("after the proposal: %d unsent rows, want 0", n)
	}
	atModel := -1
	h.model.Hook(func(core.ModelRequest) { atModel = unsent() })
	h.model.push(sessionID("c"), text("On it."))
	replies := h.say("c", "local", "/plan accept")
	if len(replies) < 2 {
		t.Fatalf("replies %q: want the decision's and the agent's", joinTexts(replies))
	}
	if atModel != 0 {
		t.Errorf("when the agent's turn asked the model, %d replies sent before were still unmarked (want 0)", atModel)
	}
	if n := unsent(); n != 0 {
		t.Errorf("after the job: %d unsent rows, want 0 (the agent's answer is marked before it is done)", n)
	}
}
