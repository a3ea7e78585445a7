package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// status GETs path and returns the status code and body, following no redirect.
func (c *client) status(path string) (int, string) {
	c.e.t.Helper()
	res, err := c.http.Get(c.e.srv.URL + path)
	if err != nil {
		c.e.t.Fatal(err)
	}
	b := body(res)
	res.Body.Close()
	return res.StatusCode, b
}

// telegramPlan starts plan mode in a telegram chat and waits for its pending plan.
func (e *env) telegramPlan(chat, title string) core.Session {
	e.t.Helper()
	a := core.Address{Channel: "telegram", Account: "900", Chat: chat}
	e.model.Push(a.SessionID(), proposal(title, "Add logrotate config"))
	ctx := context.Background()
	go func() {
		_ = e.tg.Deliver(ctx, core.Message{ID: "1", Address: a, Sender: core.Person{ID: "42", Name: "tg-user"}, Text: "/plan on " + title, Direct: true})
	}()
	var s core.Session
	waitFor(e.t, "the telegram plan", func() bool {
		s, _ = e.st.Session(ctx, a.SessionID())
		return s.Phase == core.PhaseAwaitingApproval
	})
	return s
}

// A web user sees a session (its page, its plan file, its dashboard row) only if it is
// their own conversation or they may decide on it, by the engine's rule: the policy's
// approvers where one matches, else access.approvers. Anyone else gets 404, as for a
// session that does not exist, and a decision posted for it changes nothing.
func TestWebReadsOnlyOwnOrDecidable(t *testing.T) {
	// alice is the global approver; on telegram the policy's list (bob) replaces it.
	e := newPolicyEnv(t, []machine.Policy{{Match: machine.PolicyMatch{Channel: "telegram"}, Approvers: []string{"web:bob", "telegram:42"}}}, "web:alice")
	alice, bob := e.signIn("alice"), e.signIn("bob")
	mine := e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")
	tg := e.telegramPlan("555", "Rotate the logs")

	for _, tc := range []struct {
		who    string
		c      *client
		s      core.Session
		title  string
		allow  bool
		reason string
	}{
		{"alice", alice, mine, "Tidy the docs", true, "her own conversation"},
		{"bob", bob, mine, "Tidy the docs", false, "alice's conversation; bob is no global approver"},
		{"bob", bob, tg, "Rotate the logs", true, "the telegram policy names bob"},
		{"alice", alice, tg, "Rotate the logs", false, "the telegram policy's list replaces the global one"},
	} {
		t.Run(tc.who+" "+tc.title, func(t *testing.T) {
			want := http.StatusNotFound
			if tc.allow {
				want = http.StatusOK
			}
			code, page := tc.c.status("/dashboard/sessions/" + url.PathEscape(tc.s.ID))
			if code != want || (!tc.allow && strings.Contains(page, tc.title)) {
				t.Fatalf("session page (%s): %d, want %d: %s", tc.reason, code, want, page)
			}
			code, md := tc.c.status("/plans/" + tc.s.PlanID + ".md")
			if code != want || (!tc.allow && strings.Contains(md, tc.title)) {
				t.Fatalf("plan file (%s): %d, want %d: %s", tc.reason, code, want, md)
			}
			dash := tc.c.get("/dashboard")
			if strings.Contains(dash, tc.title) != tc.allow || strings.Contains(dash, tc.s.ID) != tc.allow {
				t.Fatalf("dashboard (%s): lists %q = %v, want %v: %s", tc.reason, tc.title, !tc.allow, tc.allow, dash)
			}
			if tc.allow {
				return
			}
			if tc.s.Address.Channel == "telegram" && strings.Contains(dash, `value="telegram"`) {
				t.Fatalf("the channel filter names a channel only hidden sessions are on: %s", dash)
			}
			res := tc.c.post("/dashboard/actions", url.Values{"session": {tc.s.ID}, "kind": {"accept"}, "approval": {tc.s.ApprovalID}})
			if res.StatusCode != http.StatusNotFound {
				t.Fatalf("accept of a hidden session: %d %s, want 404", res.StatusCode, body(res))
			}
			got, err := e.st.Session(context.Background(), tc.s.ID)
			if err != nil || got.Version != tc.s.Version || got.Phase != core.PhaseAwaitingApproval {
				t.Fatalf("the refused accept changed the session: %+v %v", got, err)
			}
		})
	}
}
