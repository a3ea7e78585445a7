package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A form another site's page posts with the person's cookie is refused before it reaches
// the chat, even with a valid CSRF token; the same post from the page itself goes through.
func TestCrossOriginPostIsRefused(t *testing.T) {
	e := newEnv(t)
	c := e.signIn("alice")
	e.makeConversation("alice", "conv1")
	send := func(site, origin string) int {
		form := url.Values{"csrf": {c.csrf}, "text": {"posted by " + origin}}
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/c/conv1/messages", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Plangate-Fetch", "1")
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := send("cross-site", "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("a cross-site post: %d, want 403", code)
	}
	if code := send("", "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("a post from another origin without Sec-Fetch-Site: %d, want 403", code)
	}
	for _, m := range e.web.shown(e.session("alice", "conv1").Address) {
		if strings.Contains(m, "posted by https://evil.example") {
			t.Fatalf("a refused post reached the chat: %q", m)
		}
	}
	if code := send("same-origin", e.srv.URL); code != http.StatusNoContent {
		t.Fatalf("a same-origin post: %d, want 204", code)
	}
}
