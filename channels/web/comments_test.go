package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/plangate/plangate/core"
)

// answering is a proposal that says which comments it answers.
func answering(title string, answered []string, steps ...string) core.ModelResponse {
	r := proposal(title, steps...)
	var args map[string]any
	_ = json.Unmarshal(r.ToolCalls[0].Args, &args) // proposal's own JSON
	args["answered_comments"] = answered
	r.ToolCalls[0].Args, _ = json.Marshal(args)
	return r
}

// A step's comment box posts as a plain form (no script needed): the comment is stored on
// the pending version and shown under its step; a step number that is not one is refused
// and stores nothing.
func TestCommentBoxWithoutScript(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	s := e.pendingPlan(alice, "c1", "Add a client", "Write the client", "Call the v1 API")
	page := alice.get("/c/c1")
	for _, want := range []string{`name="step" value="2"`, "Comment on step 2 (sent with the next revise)", ">Add comment<"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the card lacks %q: %s", want, page)
		}
	}
	for _, bad := range []string{"x", "0", "-1"} {
		res := alice.post("/c/c1/actions", url.Values{"kind": {"revise"}, "approval": {s.ApprovalID}, "step": {bad}, "value": {"no"}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body(res), "That step number is not one plangate knows") {
			t.Errorf("step %q: %d %s", bad, res.StatusCode, body(res))
		}
	}
	res := alice.post("/c/c1/actions", url.Values{"kind": {"revise"}, "approval": {s.ApprovalID}, "step": {"2"}, "value": {"use the v2 API"}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("comment: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the comment's reply", func() bool { return e.shows("alice", "c1", "Comment c1 on step 2") })
	p, err := e.st.Plan(t.Context(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if cs := p.Run.Comments; len(cs) != 1 || cs[0].Steps[0] != 2 || cs[0].Text != "use the v2 API" || p.Status != core.PlanPending {
		t.Fatalf("stored: %s %+v", p.Status, cs)
	}
	if page := alice.get("/c/c1"); !strings.Contains(page, "c1 (alice): use the v2 API") {
		t.Fatalf("the card does not show the comment under its step: %s", page)
	}
}

// TestBrowserStepComment: in a real browser, a comment typed into step 2's box shows under
// the step; the Revise with no text sends it; v2's card says it answered it.
func TestBrowserStepComment(t *testing.T) {
	e, alice, conv := pendingInBrowser(t, "add a client", proposal("Add a client", "Write the client", "Call the v1 API"))
	sid := address("alice", conv).SessionID()
	v1 := `section.card[aria-label="Plan v1"]`
	do(t, alice, "commenting on step 2",
		chromedp.Click(chromedp.CSS(v1+` li.step:nth-child(2) details.comment summary`)),
		chromedp.SendKeys(chromedp.CSS(v1+` li.step:nth-child(2) textarea`), "use the v2 API instead"),
	)
	// The pinned composer may cover the box at the transcript's end: press the button itself.
	press(t, alice, v1+` li.step:nth-child(2) .add-comment`)
	do(t, alice, "waiting for the comment on the card", chromedp.WaitVisible(chromedp.CSS(v1+` li.step:nth-child(2) ul.comments li`)))
	if got := text(t, alice, v1+` li.step:nth-child(2) ul.comments li`); got != "c1 (alice): use the v2 API instead" {
		t.Fatalf("the comment under step 2: %q", got)
	}
	p, err := e.st.Plan(t.Context(), e.session("alice", conv).PlanID)
	if err != nil || len(p.Run.Comments) != 1 || p.Run.Comments[0].Steps[0] != 2 {
		t.Fatalf("stored comments: %+v, %v", p.Run.Comments, err)
	}

	e.model.Push(sid, answering("Add a client", []string{"c1"}, "Write the client", "Call the v2 API"))
	do(t, alice, "sending the comment back",
		chromedp.Click(chromedp.CSS(v1+` details.revise summary`)))
	press(t, alice, v1+` .send-feedback`)
	do(t, alice, "waiting for v2", chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v2"] button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .changes`); got != "Changes from v1: + Call the v2 API · − Call the v1 API · comment c1 on step 2 answered" {
		t.Fatalf("v2's changes: %q", got)
	}
}

// press clicks the button sel as a person's click would, wherever it is on the screen.
func press(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	q, _ := json.Marshal(sel) // a string always encodes
	if !eval[bool](t, ctx, `(b => { if (!b) { return false; } b.click(); return true; })(document.querySelector(`+string(q)+`))`) {
		t.Fatalf("no button %s", sel)
	}
}
