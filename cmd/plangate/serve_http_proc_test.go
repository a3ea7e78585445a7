package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// procLog collects a child process's log lines and finds values in them.
type procLog struct {
	mu   sync.Mutex
	text strings.Builder
}

func (l *procLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.WriteString(line + "\n")
}

// Write takes a process's output as it comes (exec.Cmd's Stderr).
func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.Write(p)
}

// waitFor polls cond until it holds, failing the test with the process's log when ctx
// ends first.
func (l *procLog) waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, l.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// TestServeHTTP runs `plangate serve` as a real process with http.listen on a free port:
// /healthz, /readyz (store and telegram), /metrics and /debug/pprof/ with and without the
// admin token answer; a request in flight at SIGTERM finishes with its full answer, and the
// process then stops cleanly, with neither secret in its log.
func TestServeHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := &fakeBotAPI{}
	api := httptest.NewServer(fake)
	defer api.Close()
	dir := t.TempDir()
	demo, _ := filepath.Abs(filepath.Join("..", "..", "demo"))
	cfg := fmt.Sprintf(`llm: {provider: script, script: %q}
access:
  approvers: ["telegram:777"]
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
  web:
    enabled: true
    users:
      alice: ${PLANGATE_WEB_ALICE}
http:
  listen: 127.0.0.1:0
  max_body: 64KiB
`, filepath.Join(demo, "script.yaml"), api.URL)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	const botToken, adminToken = "123456:TEST-token-never-printed", "admin-TEST-token-0123456789"
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN="+botToken, "PLANGATE_ADMIN_TOKEN="+adminToken, "PLANGATE_WEB_ALICE=alice-TEST-token-0123456789")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs procLog
	logDone := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(logDone)
		listening := regexp.MustCompile(`msg="http listening" addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-logDone:
		t.Fatalf("serve ended without an http listening line:\n%s", logs.String())
	case <-ctx.Done():
		t.Fatalf("no http listening line:\n%s", logs.String())
	}

	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	// Ready once the telegram channel runs; until then 503 naming it.
	for {
		code, r := readyz(t, base)
		if code == 200 {
			if !r.Ready || r.Checks["store"] != "ok" || r.Checks["telegram"] != "ok" || r.Checks["web"] != "ok" || r.Checks["channels"] != "ok" || len(r.Checks) != 4 {
				t.Errorf("readyz: %+v", r)
			}
			break
		}
		if code != 503 || r.Checks["telegram"] == "ok" && r.Checks["store"] == "ok" && r.Checks["web"] == "ok" {
			t.Fatalf("readyz while starting: %d %+v", code, r)
		}
		if ctx.Err() != nil {
			t.Fatalf("never ready: %+v\n%s", r, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		path, auth string
		code       int
		want       string
	}{
		{"/debug/pprof/", "", 401, "missing or wrong admin token"},
		{"/debug/pprof/", "Bearer " + adminToken + "x", 401, ""},
		{"/debug/pprof/", "Bearer " + adminToken, 200, "goroutine"},
		{"/nope", "", 404, ""},
		{"/api/v1/sessions", "", 401, "admin token"}, // the admin API is mounted when admin_token is set
		{"/api/v1/sessions", "Bearer " + adminToken, 200, `"items": [`},
		{"/api/v1/sessions/nope", "Bearer " + adminToken, 404, "no session"},
		{"/login", "", 200, "<form"}, // the web channel's pages, on the same server
		{"/metrics", "", 200, `plangate_http_requests_total{code="200",route="GET /healthz"} 1`},
	} {
		code, body := get(t, base+tc.path, "Authorization", tc.auth)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s (%q): %d %.300s", tc.path, tc.auth, code, body)
		}
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `plangate_http_requests_total{code="401",route="GET /debug/pprof/"} 2`) ||
		!strings.Contains(body, "process_open_fds") {
		t.Errorf("metrics after the requests:\n%s", body)
	}

	// A signed-in browser holds the web channel's event stream open: the stop must end it.
	streamEnded := openWebStream(t, base, "alice-TEST-token-0123456789")

	// A message through the web channel runs the demo agent: the counters of serve's one
	// Metrics move by what the engine, the store and the Hub did.
	postWebMessage(t, base, "alice-TEST-token-0123456789", "please clean up the docs")
	var body string
	for {
		_, body = get(t, base+"/metrics")
		if strings.Contains(body, "\nplangate_plans_pending 1\n") &&
			strings.Contains(body, `plangate_inbound_total{channel="web",outcome="handled"} 1`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the proposal never showed in the metrics:\n%s\n%s", body, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`plangate_tool_calls_total{outcome="blocked",tool="write_file"} 1`,
		`plangate_model_request_seconds_count{outcome="ok"} 6`,
		`plangate_replies_total{channel="web",outcome="sent"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	if m := regexp.MustCompile(`plangate_store_commit_seconds_count\{durable="true"\} (\d+)`).FindStringSubmatch(body); m == nil || m[1] == "0" {
		t.Errorf("no durable store commit counted:\n%s", body)
	}

	// A CPU profile of one second is in flight when SIGTERM arrives: it must still get its
	// whole answer. The goroutine dump shows when its handler is running.
	type answer struct {
		code int
		body string
		err  error
	}
	inflight := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", base+"/debug/pprof/profile?seconds=1", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			inflight <- answer{err: err}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		_, err = bufio.NewReader(res.Body).WriteTo(&b)
		inflight <- answer{res.StatusCode, b.String(), err}
	}()
	for {
		_, dump := get(t, base+"/debug/pprof/goroutine?debug=2", "Authorization", "Bearer "+adminToken)
		if strings.Contains(dump, "net/http/pprof.Profile(") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the profile request never reached its handler")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := <-inflight
	if err := <-streamEnded; err != nil {
		t.Errorf("the web event stream did not end cleanly at the stop: %v", err)
	}
	if got.err != nil || got.code != 200 || len(got.body) == 0 {
		t.Errorf("the request in flight at SIGTERM: %d, %d bytes, %v", got.code, len(got.body), got.err)
	}
	err = cmd.Wait()
	<-logDone
	out := logs.String()
	if err != nil {
		t.Fatalf("serve exited with %v\n%s", err, out)
	}
	for _, want := range []string{"http server stopped", "stopped cleanly"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TEST-token") || strings.Contains(out, "access.approvers is empty") {
		t.Errorf("a token or the open-approval warning is in the log:\n%s", out)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after the stop")
	}
}

// openWebStream signs in to the web channel as a browser does and opens a conversation's
// event stream; the channel reports when the stream has ended (nil: ended cleanly).
func openWebStream(t *testing.T, base, token string) <-chan error {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	res, err := client.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the sign-in page:\n%s", page)
	}
	res, err = client.PostForm(base+"/login", url.Values{"csrf": {string(m[1])}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.Path != "/" {
		t.Fatalf("signing in: %d at %s", res.StatusCode, res.Request.URL)
	}
	// The new conversation's page names its stream, with the last event it shows
	// (?after=), as the browser's script uses it; without that the stream would only tell
	// the page to reload.
	_, page = newWebConversation(t, client, base, page)
	stream := regexp.MustCompile(`/c/[a-z0-9]+/events\?after=[A-Za-z0-9-]+`).Find(page)
	if stream == nil {
		t.Fatalf("the conversation page names no event stream:\n%s", page)
	}
	req, _ := http.NewRequest("GET", base+string(stream), nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body.Close()
		t.Fatalf("event stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ended := make(chan error, 1)
	go func() {
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err == nil && strings.Contains(string(b), "event: reload") {
			err = fmt.Errorf("the stream ended at once, asking for a reload: %q", b)
		}
		ended <- err
	}()
	return ended
}

// newWebConversation clicks New conversation on page (one with the form) and returns the
// new conversation's path and page.
func newWebConversation(t *testing.T, client *http.Client, base string, page []byte) (string, []byte) {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the chat page:\n%s", page)
	}
	res, err := client.PostForm(base+"/conversations", url.Values{"csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Request.URL.Path, "/c/") {
		t.Fatalf("New conversation: %d at %s", res.StatusCode, res.Request.URL)
	}
	return res.Request.URL.Path, page
}

// postWebMessage signs in to the web channel and sends text in a new conversation, as
// the page's form does.
func postWebMessage(t *testing.T, base, token, text string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	csrf := func(path string) string {
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF field on %s:\n%s", path, page)
		}
		return string(m[1])
	}
	res, err := client.PostForm(base+"/login", url.Values{"csrf": {csrf("/login")}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	home, _ := io.ReadAll(res.Body)
	res.Body.Close()
	conv, _ := newWebConversation(t, client, base, home)
	res, err = client.PostForm(base+conv+"/messages", url.Values{"csrf": {csrf(conv)}, "text": {text}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode >= 400 {
		t.Fatalf("posting a web message: %d", res.StatusCode)
	}
}
