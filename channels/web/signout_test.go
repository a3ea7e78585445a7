package web

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// TestMain stops the throwaway PostgreSQL server, if a test started one.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// replica is the web channel on its own HTTP server over st, as one process (or one
// replica) of plangate would run it.
func replica(t *testing.T, st *store.Store, d Deps) *env {
	t.Helper()
	return configured(t, st, Config{Enabled: true, Users: testUsers}, d)
}

// configured is replica with a configuration of the test's own.
func configured(t *testing.T, st *store.Store, cfg Config, d Deps) *env {
	t.Helper()
	e := &env{t: t, st: st}
	d.Store = st
	d.WrongToken = func(context.Context) {}
	var err error
	if e.web, err = New(cfg, d); err != nil {
		t.Fatal(err)
	}
	e.srv = serve(t, e.web)
	return e
}

// sessionCookieOf returns the sign-in cookie c's jar holds for e's server.
func (c *client) sessionCookieOf(e *env) *http.Cookie {
	c.e.t.Helper()
	u, _ := url.Parse(e.srv.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			return &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	c.e.t.Fatal("no sign-in cookie")
	return nil
}

// nonceOf is the sign-in nonce inside a cookie's value.
func nonceOf(t *testing.T, ck *http.Cookie) string {
	t.Helper()
	enc, _, _ := strings.Cut(ck.Value, ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		t.Fatalf("cookie body %q", raw)
	}
	return parts[1]
}

// signedIn reports whether a browser holding only ck is signed in on e's server.
func signedIn(t *testing.T, e *env, ck *http.Cookie) bool {
	t.Helper()
	c := e.client()
	u, _ := url.Parse(e.srv.URL)
	c.http.Jar.SetCookies(u, []*http.Cookie{ck})
	res, err := c.http.Get(e.srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	switch {
	case res.StatusCode == http.StatusOK:
		return true
	case res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == "/login":
		return false
	}
	t.Fatalf("GET /dashboard: %d to %q", res.StatusCode, res.Header.Get("Location"))
	return false
}

// A cookie copied before sign-out stays signed out when plangate starts again on the
// same store file: the sign-out is in the store, not in the process.
func TestSignOutSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	first := replica(t, st, Deps{})
	alice := first.signIn("alice")
	copied := alice.sessionCookieOf(first)
	if !signedIn(t, first, copied) {
		t.Fatal("the copied cookie does not work before sign-out")
	}
	if res := alice.post("/logout", url.Values{}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", res.StatusCode, body(res))
	}
	if out, err := st.SignedOut(ctx, nonceOf(t, copied)); err != nil || !out {
		t.Fatalf("the store has no sign-out of the cookie: %v, %v", out, err)
	}
	if signedIn(t, first, copied) {
		t.Fatal("the copied cookie works after sign-out")
	}
	first.srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	again := replica(t, st2, Deps{})
	if signedIn(t, again, copied) {
		t.Fatal("after a restart the copied cookie works again")
	}
	if !signedIn(t, again, again.signIn("alice").sessionCookieOf(again)) {
		t.Fatal("a new sign-in does not work after the restart")
	}
}

// On PostgreSQL two replicas share the database: a sign-out on one is refused by the
// other at once.
func TestSignOutOnAnotherReplica(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	open := func() *store.Store {
		st, err := store.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a, b := replica(t, open(), Deps{}), replica(t, open(), Deps{})
	alice := a.signIn("alice")
	copied := alice.sessionCookieOf(a)
	if !signedIn(t, b, copied) {
		t.Fatal("the cookie of replica a does not work on replica b")
	}
	if res := alice.post("/logout", url.Values{}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", res.StatusCode, body(res))
	}
	if out, err := b.st.SignedOut(ctx, nonceOf(t, copied)); err != nil || !out {
		t.Fatalf("replica b's store has no sign-out: %v, %v", out, err)
	}
	if signedIn(t, b, copied) {
		t.Fatal("replica b still takes a cookie signed out on replica a")
	}
}

// Signing out prunes the sign-outs of cookies that have expired since.
func TestSignOutPrunesExpired(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var mu sync.Mutex
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := replica(t, st, Deps{Now: clock})
	old := e.signIn("alice")
	oldNonce := nonceOf(t, old.sessionCookieOf(e))
	old.post("/logout", url.Values{})
	if out, _ := st.SignedOut(ctx, oldNonce); !out {
		t.Fatal("the first sign-out is not in the store")
	}
	mu.Lock()
	now = now.Add(DefaultSessionTTL + time.Minute)
	mu.Unlock()
	later := e.signIn("alice")
	laterNonce := nonceOf(t, later.sessionCookieOf(e))
	later.post("/logout", url.Values{})
	if out, _ := st.SignedOut(ctx, oldNonce); out {
		t.Fatal("the sign-out of an expired cookie was kept")
	}
	if out, _ := st.SignedOut(ctx, laterNonce); !out {
		t.Fatal("the new sign-out was pruned")
	}
}

// The CSRF token belongs to one sign-in: the token of another sign-in of the same user
// is refused and nothing reaches the engine.
func TestCSRFBoundToSignIn(t *testing.T) {
	e := newEnv(t)
	one, two := e.signIn("alice"), e.signIn("alice")
	if one.csrf == two.csrf {
		t.Fatal("two sign-ins have the same CSRF token")
	}
	form := url.Values{"text": {"hello"}, "csrf": {one.csrf}}
	if res := two.post("/c/abc/messages", form); res.StatusCode != http.StatusForbidden || !strings.Contains(body(res), "CSRF") {
		t.Fatalf("another sign-in's token: %d, want 403 naming the CSRF check", res.StatusCode)
	}
	if res := two.post("/logout", url.Values{"csrf": {one.csrf}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-out with another sign-in's token: %d, want 403", res.StatusCode)
	}
	if out, _ := e.st.SignedOut(context.Background(), nonceOf(t, two.sessionCookieOf(e))); out {
		t.Fatal("a refused sign-out was recorded")
	}
	if s := e.session("alice", "abc"); s.Version != 0 {
		t.Fatalf("a refused post reached the engine: %+v", s)
	}
	one.say("abc", "hello")
	waitFor(t, "the message of the right token", func() bool { return e.session("alice", "abc").Version != 0 })
}

// With an https public_url the cookies are Secure even though secure_cookie is unset.
func TestSecureCookieFromPublicURL(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, tc := range []struct {
		url    string
		secure bool
	}{{"https://gw.example.com/plangate", true}, {"http://127.0.0.1:8080", false}, {"", false}} {
		t.Run(tc.url, func(t *testing.T) {
			e := replica(t, st, Deps{PublicURL: tc.url})
			c := e.client()
			res, err := c.http.Get(e.srv.URL + "/login")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			for _, ck := range res.Cookies() {
				if ck.Name == loginCookie && ck.Secure != tc.secure {
					t.Fatalf("the sign-in form's cookie: Secure=%v, want %v", ck.Secure, tc.secure)
				}
			}
			res = c.postLogin(testUsers["alice"])
			var got *http.Cookie
			for _, ck := range res.Cookies() {
				if ck.Name == sessionCookie {
					got = ck
				}
			}
			if got == nil || got.Secure != tc.secure {
				t.Fatalf("the sign-in cookie %+v: want Secure=%v", got, tc.secure)
			}
		})
	}
}

// A live page opened with a copied cookie ends once the sign-in is signed out: the
// stream checks its sign-in at every keep-alive.
func TestSignOutEndsOpenStream(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := replica(t, st, Deps{})
	e.web.keepAlive = 5 * time.Millisecond
	alice := e.signIn("alice")
	e.makeConversation("alice", "live")
	copied := e.client()
	u, _ := url.Parse(e.srv.URL)
	ck := alice.sessionCookieOf(e)
	copied.http.Jar.SetCookies(u, []*http.Cookie{ck})
	res, r := copied.openStream(t, "live", e.web.eventID(0), "")
	defer res.Body.Close()
	if line, err := r.ReadString('\n'); err != nil || line != ": keep-alive\n" {
		t.Fatalf("the stream before sign-out: %q, %v", line, err)
	}
	alice.post("/logout", url.Values{})
	for {
		_, err := r.ReadString('\n')
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the stream did not end after sign-out: %v", err)
		}
		break // the server ended the stream
	}
	if signedIn(t, e, ck) {
		t.Fatal("the copied cookie still signs in")
	}
}
