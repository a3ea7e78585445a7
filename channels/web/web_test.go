package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

func TestSignIn(t *testing.T) {
	e := newEnv(t)
	c := e.client()

	res := c.postLogin("not-the-token-at-all")
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", res.StatusCode)
	}
	if b := body(res); !strings.Contains(b, "That token is not right") || !strings.Contains(b, `name="token"`) {
		t.Fatalf("wrong token: the form with one line saying so, got %s", b)
	}
	if n := e.waited.Load(); n != 1 {
		t.Fatalf("wrong token waited %d times, want 1", n)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == sessionCookie {
			t.Fatal("a wrong token got a session cookie")
		}
	}

	res = c.postLogin(testUsers["alice"])
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("right token: %d to %q, want 303 to /", res.StatusCode, res.Header.Get("Location"))
	}
	var got *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == sessionCookie {
			got = ck
		}
	}
	if got == nil {
		t.Fatal("no session cookie")
	}
	if !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Path != "/" || got.MaxAge <= 0 {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ and a lifetime", got)
	}
	if strings.Contains(got.Value, testUsers["alice"]) {
		t.Fatal("the cookie contains the token")
	}
	if e.waited.Load() != 1 {
		t.Fatal("the right token was delayed")
	}
	page := c.get("/")
	if !strings.Contains(page, "Signed in as alice") {
		t.Fatalf("home after sign-in: %s", page)
	}
	c.csrf = csrfField.FindStringSubmatch(page)[1]

	res = c.post("/logout", url.Values{})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", res.StatusCode)
	}
	res2, err := c.http.Get(e.srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusSeeOther || res2.Header.Get("Location") != "/login" {
		t.Fatalf("after sign-out: %d to %q, want the sign-in form", res2.StatusCode, res2.Header.Get("Location"))
	}

	// The old cookie, replayed, is refused too: sign-out revoked it.
	replay := e.client()
	u, _ := url.Parse(e.srv.URL)
	replay.http.Jar.SetCookies(u, []*http.Cookie{got})
	res3, err := replay.http.Get(e.srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	res3.Body.Close()
	if res3.StatusCode != http.StatusSeeOther {
		t.Fatalf("replayed cookie after sign-out: %d, want a redirect to sign in", res3.StatusCode)
	}

	forged := e.client()
	forged.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: got.Value[:len(got.Value)-2] + "xx"}})
	res4, _ := forged.http.Get(e.srv.URL + "/dashboard")
	res4.Body.Close()
	if res4.StatusCode != http.StatusSeeOther {
		t.Fatalf("forged cookie: %d, want a redirect to sign in", res4.StatusCode)
	}
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t)
	c := e.signIn("alice")
	for _, tc := range []struct{ name, csrf string }{{"missing", ""}, {"wrong", strings.Repeat("0", 32)}} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"text": {"hello"}}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			} else {
				form["csrf"] = nil
			}
			res := c.post("/c/abc/messages", form)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(body(res), "CSRF") {
				t.Fatalf("%d, want 403 naming the CSRF check", res.StatusCode)
			}
		})
	}
	// The sign-in form without its cookie is refused as well.
	bare := e.client()
	res := bare.post("/login", url.Values{"csrf": {"x"}, "token": {testUsers["alice"]}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without the form's cookie: %d, want 403", res.StatusCode)
	}
	if s := e.session("alice", "abc"); s.Version != 0 {
		t.Fatalf("a refused post reached the engine: %+v", s)
	}
}

// pendingPlan starts plan mode in alice's conversation and waits for the plan card.
func (e *env) pendingPlan(c *client, conv, title string, steps ...string) core.Session {
	e.t.Helper()
	e.model.Push(address("alice", conv).SessionID(), proposal(title, steps...))
	c.say(conv, "/plan on "+title)
	var s core.Session
	waitFor(e.t, "the plan to wait", func() bool {
		s = e.session("alice", conv)
		return s.Phase == core.PhaseAwaitingApproval
	})
	e.waitCard("alice", conv, s.PlanID)
	return s
}

func TestNonApproverRefused(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice, bob := e.signIn("alice"), e.signIn("bob")
	s := e.pendingPlan(alice, "c1", "Tidy the docs", "Fix links")

	page := bob.get("/dashboard")
	if strings.Contains(page, "Tidy the docs") || strings.Contains(page, ">Accept<") {
		t.Fatalf("bob's dashboard lists alice's conversation: %s", page)
	}
	if !strings.Contains(page, "web:bob is not one") {
		t.Fatal("bob's dashboard does not say why it lists so little")
	}
	res := bob.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("bob's accept: %d, want 404", res.StatusCode)
	}
	if got := e.session("alice", "c1"); got.Phase != core.PhaseAwaitingApproval || got.Version != s.Version {
		t.Fatalf("the refused accept changed the session: %+v", got)
	}
	if page := alice.get("/dashboard"); !strings.Contains(page, ">Accept<") {
		t.Fatal("alice, an approver, has no Accept button on the dashboard")
	}
}

var (
	scriptTag  = regexp.MustCompile(`(?i)<script`)
	eventAttr  = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	jsLink     = regexp.MustCompile(`(?i)(href|src)\s*=\s*["']?\s*javascript:`)
	noopenerOK = regexp.MustCompile(`<a href="https://example\.com/x"[^>]*rel="[^"]*noopener`)
)

func TestRenderInert(t *testing.T) {
	hostile := []string{
		`<script>alert(1)</script>`,
		`<img src=x onerror=alert(1)>`,
		`[click](javascript:alert(1))`,
		`<a href="javascript:alert(1)">x</a>`,
		"<div onclick=alert(1)>hi</div>\n\ntext",
		`<svg onload=alert(1)>`,
	}
	for _, h := range hostile {
		out := string(renderMarkdown("reply " + h))
		if scriptTag.MatchString(out) || eventAttr.MatchString(out) || jsLink.MatchString(out) {
			t.Errorf("%q renders live: %s", h, out)
		}
	}
	if out := string(renderMarkdown("see [docs](https://example.com/x) and /plan revise <feedback>")); !noopenerOK.MatchString(out) || !strings.Contains(out, "&lt;feedback&gt;") {
		t.Errorf("links want rel=noopener and raw HTML shown as text: %s", out)
	}
}

func TestPlanTitleAndReplyInert(t *testing.T) {
	e := newEnv(t)
	alice := e.signIn("alice")
	title := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	sid := address("alice", "c2").SessionID()
	e.model.Push(sid, proposal(title, "[x](javascript:alert(3))"))
	alice.say("c2", "/plan on hostile")
	waitFor(t, "the plan", func() bool { return e.session("alice", "c2").Phase == core.PhaseAwaitingApproval })
	e.waitCard("alice", "c2", e.session("alice", "c2").PlanID)
	ctx := context.Background()
	if _, err := e.web.Send(ctx, core.Reply{To: address("alice", "c2"), Text: `hi <script>alert(4)</script> [a](javascript:alert(5)) <b onmouseover=alert(6)>b</b>`}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/c/c2", "/dashboard", "/dashboard/sessions/" + url.PathEscape(sid)} {
		page := alice.get(path)
		if scriptTag.FindAllStringIndex(page, -1) != nil && len(scriptTag.FindAllString(page, -1)) != 1 {
			t.Errorf("%s: a script tag besides the page's own: %s", path, page)
		}
		if eventAttr.MatchString(page) || jsLink.MatchString(page) {
			t.Errorf("%s renders hostile markup live: %s", path, page)
		}
		if path == "/c/c2" && !strings.Contains(page, "&lt;script&gt;alert(1)") {
			t.Errorf("%s does not show the hostile title as text", path)
		}
	}
}

// TestConformance runs the suite every adapter passes, with the browser's side played
// over HTTP by a signed-in client.
func TestConformance(t *testing.T) {
	channeltest.RunConformance(t, func(t *testing.T) channeltest.Harness {
		e := bareEnv(t)
		alice := e.signIn("alice")
		a := address("alice", "conf")
		return channeltest.Harness{
			Channel: e.web,
			Address: a,
			Sender:  "alice",
			Inject: func(_ context.Context, _, text string) error {
				alice.say("conf", text)
				return nil
			},
			Shown: func() []string { return e.web.shown(a) },
		}
	})
}
