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

// TestRedTeamEditUploadFileNameOverCap: the Edit upload's file name is not held to
// max_message_bytes: a 200 KB name (under http.max_body) is shown in the conversation as
// "Edited plan: <name>" and kept in memory, the cost the cap exists to bound.
func TestRedTeamEditUploadFileNameOverCap(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")
	name := strings.Repeat("n", 200<<10) + ".md"
	res := alice.upload("/c/c1/edit", name, []byte("not a plan"))
	code := res.StatusCode
	res.Body.Close()
	for _, it := range e.web.shown(address("alice", "c1")) {
		if len(it) > 2*DefaultMaxMessageBytes {
			t.Errorf("the upload (%d), its file name %d bytes, is shown as an item of %d bytes (cap %d)", code, len(name), len(it), DefaultMaxMessageBytes)
		}
	}
}

// TestRedTeamAnotherUsersConversationRoutes: bob, an approver who may see alice's session
// on the dashboard, still has no way into her conversation's own routes: its page, its
// live stream, a message, a button and an Edit upload under her conversation's id are
// bob's own unknown conversation, 404, and the store and the page keep nothing of them.
func TestRedTeamAnotherUsersConversationRoutes(t *testing.T) {
	e := newEnv(t, "web:alice", "web:bob")
	alice, bob := e.signIn("alice"), e.signIn("bob")
	s := e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")
	shown := len(e.web.shown(address("alice", "c1")))
	for _, path := range []string{"/c/c1", "/c/c1/events?after=" + e.web.eventID(0)} {
		if code, page := bob.status(path); code != http.StatusNotFound || strings.Contains(page, "Tidy the docs") {
			t.Errorf("bob GET %s: %d, want 404 without alice's plan", path, code)
		}
	}
	for _, form := range []url.Values{
		{"text": {"hello from bob"}},
		{"kind": {"accept"}, "approval": {s.ApprovalID}},
	} {
		path := "/c/c1/messages"
		if form.Has("kind") {
			path = "/c/c1/actions"
		}
		res := bob.post(path, form)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("bob POST %s: %d, want 404", path, res.StatusCode)
		}
	}
	if res := bob.upload("/c/c1/edit", "plan.md", []byte("# edited by bob\n")); res.StatusCode != http.StatusNotFound {
		t.Errorf("bob's upload into alice's conversation: %d, want 404", res.StatusCode)
	}
	if got := e.session("alice", "c1"); got.Version != s.Version || got.ApprovalID != s.ApprovalID || got.Phase != core.PhaseAwaitingApproval {
		t.Errorf("bob's posts changed alice's session: %+v", got)
	}
	if n := len(e.web.shown(address("alice", "c1"))); n != shown {
		t.Errorf("alice's conversation shows %d items after bob's posts, want %d", n, shown)
	}
	if _, err := e.st.Session(context.Background(), address("bob", "c1").SessionID()); err == nil {
		t.Error("bob's posts made a session of his own under alice's conversation id")
	}
}

// TestRedTeamCSRFOfAnotherUser: alice's CSRF token in bob's signed-in request is refused:
// a dashboard accept changes nothing and New conversation makes nothing for bob.
func TestRedTeamCSRFOfAnotherUser(t *testing.T) {
	e := newEnv(t, "web:alice", "web:bob")
	alice, bob := e.signIn("alice"), e.signIn("bob")
	s := e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")
	res := bob.post("/dashboard/actions", url.Values{"csrf": {alice.csrf}, "session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}})
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("bob's accept with alice's CSRF token: %d, want 403", res.StatusCode)
	}
	res = bob.post("/conversations", url.Values{"csrf": {alice.csrf}})
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("bob's New conversation with alice's CSRF token: %d, want 403", res.StatusCode)
	}
	if got := e.session("alice", "c1"); got.Phase != core.PhaseAwaitingApproval || got.Version != s.Version {
		t.Errorf("the refused accept changed the session: %+v", got)
	}
	if made := e.madeIDs("bob"); len(made) != 0 {
		t.Errorf("the refused New conversation made %v for bob", made)
	}
}
