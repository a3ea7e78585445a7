package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestRedTeamDashboardReviseOverCap: max_message_bytes is checked on the chat's Send
// and its buttons, but not on the dashboard's buttons: an approver's Revise posted to
// /dashboard/actions with 200 KB of feedback (under http.max_body) is taken, handed to
// the engine and stored on the session as its last feedback (and the agent's next turn).
func TestRedTeamDashboardReviseOverCap(t *testing.T) {
	t.Skip("red team: /dashboard/actions does not apply max_message_bytes to a Revise's feedback")
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	s := e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")
	huge := strings.Repeat("z", 200<<10)
	e.model.Push(s.ID, proposal("Tidy the docs again", "Fix links"))
	res := alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"revise"}, "approval": {s.ApprovalID}, "value": {huge}})
	code := res.StatusCode
	res.Body.Close()
	if code == http.StatusRequestEntityTooLarge {
		if got := e.session("alice", "c1"); got.Version != s.Version || got.Phase != core.PhaseAwaitingApproval {
			t.Fatalf("the refused revise changed the session: %+v", got)
		}
		return
	}
	waitFor(t, "the revise to be handled", func() bool { return e.session("alice", "c1").Version > s.Version })
	got, err := e.st.Session(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.LastFeedback) > DefaultMaxMessageBytes {
		t.Errorf("the dashboard's revise (%d bytes, cap %d) answered %d and its feedback is stored on the session (%d bytes)", len(huge), DefaultMaxMessageBytes, code, len(got.LastFeedback))
	}
}
