package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/store"
)

var testUsers = map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789xyz"}

// env is the web channel on the shared HTTP server, in a Hub with a fake Telegram
// channel, over the real engine and store, with a scripted model.
type env struct {
	t      *testing.T
	st     *store.Store
	eng    *engine.Engine
	web    *Channel
	tg     *channeltest.Fake
	model  *channeltest.Model
	srv    *httptest.Server
	waited atomic.Int64 // wrong-token delays
	// refreshes counts the background refreshes of open dashboards (newPolicyEnv only)
	refreshes atomic.Int64
}

func newEnv(t *testing.T, approvers ...string) *env {
	t.Helper()
	return newPolicyEnv(t, nil, approvers...)
}

// newPolicyEnv is newEnv with access.policies in force for the engine and the channel.
func newPolicyEnv(t *testing.T, policies []machine.Policy, approvers ...string) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, st: st, tg: channeltest.NewFake("telegram"), model: channeltest.NewModel()}
	log := slog.New(slog.DiscardHandler)
	e.web, err = New(Config{Enabled: true, Users: testUsers}, Deps{Store: st, Approvers: approvers, Policies: policies, Log: log,
		WrongToken: func(context.Context) { e.waited.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	hub := channels.NewHub(log, e.web, e.tg)
	e.eng = engine.NewEngine(engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, PlanMode: true, Approvers: approvers, Policies: policies, Nudges: []time.Duration{10 * time.Minute}},
		engine.Deps{Store: st, Model: e.model, Out: hub, Log: log})
	hs := httpserver.New(httpserver.Config{}, nil, log)
	e.web.RegisterHTTP(hs)
	h := hs.Handler()
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Plangate-Refresh") != "" {
			e.refreshes.Add(1) // an open dashboard's background refresh
		}
		h.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx, e.eng) }()
	srv := e.srv
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		_ = e.eng.Wait(wctx)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub: %v", err)
		}
	})
	return e
}

// bareEnv is the web channel on its server over a real store, without engine or Hub:
// the test runs the channel itself.
func bareEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, st: st}
	e.web, err = New(Config{Enabled: true, Users: testUsers}, Deps{Store: st, WrongToken: func(context.Context) { e.waited.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = serve(t, e.web)
	return e
}

// serve puts a channel's routes on a fresh HTTP server.
func serve(t *testing.T, ch *Channel) *httptest.Server {
	hs := httpserver.New(httpserver.Config{}, nil, nil)
	ch.RegisterHTTP(hs)
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// client is one browser: a cookie jar, signed in as a user or not.
type client struct {
	e    *env
	http *http.Client
	csrf string
	user string // signed in as ("" = nobody)
}

// runIdle runs the channel with a handler that takes every message and does nothing,
// until the test ends.
func (e *env) runIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = e.web.Run(ctx, channels.HandlerFunc(func(context.Context, core.Message) error { return nil }))
	}()
}

func (e *env) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{e: e, http: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs in with the user's token and remembers the CSRF token.
func (e *env) signIn(user string) *client {
	e.t.Helper()
	c := e.client()
	res := c.postLogin(testUsers[user])
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("signing in as %s: %d", user, res.StatusCode)
	}
	page := c.get("/dashboard")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no CSRF token on the dashboard of %s: %s", user, page)
	}
	c.csrf, c.user = m[1], user
	return c
}

// makeConversation records conversation id of user as New conversation does, with an id
// the test chooses.
func (e *env) makeConversation(user, id string) {
	e.t.Helper()
	ctx := context.Background()
	ids, err := e.web.made(ctx, user)
	if err != nil {
		e.t.Fatal(err)
	}
	if slices.Contains(ids, id) {
		return
	}
	if err := e.st.SetChannelState(ctx, Name, user, conversationsKey, strings.Join(append(ids, id), " ")); err != nil {
		e.t.Fatal(err)
	}
}

func (c *client) postLogin(token string) *http.Response {
	c.e.t.Helper()
	form := c.get("/login")
	m := csrfField.FindStringSubmatch(form)
	if m == nil {
		c.e.t.Fatalf("no CSRF token on the sign-in form: %s", form)
	}
	return c.post("/login", url.Values{"csrf": {m[1]}, "token": {token}})
}

func (c *client) get(path string) string {
	c.e.t.Helper()
	res, err := c.http.Get(c.e.srv.URL + path)
	if err != nil {
		c.e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		c.e.t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return string(b)
}

// post posts a form (with the client's CSRF token unless form has one) and returns the
// response with its body read into a buffer.
func (c *client) post(path string, form url.Values) *http.Response {
	c.e.t.Helper()
	if _, ok := form["csrf"]; !ok && c.csrf != "" {
		form.Set("csrf", c.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, c.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Plangate-Fetch", "1")
	res, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res
}

func body(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// say posts a chat message in conversation conv, made first if it is not yet.
func (c *client) say(conv, text string) {
	c.e.t.Helper()
	c.e.makeConversation(c.user, conv)
	if res := c.post("/c/"+conv+"/messages", url.Values{"text": {text}}); res.StatusCode != http.StatusNoContent {
		c.e.t.Fatalf("sending %q: %d %s", text, res.StatusCode, body(res))
	}
}

// proposal is a model answer that proposes a plan with the given steps.
func proposal(title string, steps ...string) core.ModelResponse {
	return scopedProposal(title, nil, steps...)
}

// scopedProposal is proposal with a scope when paths is not nil: the files it may change,
// and a budget of that many files.
func scopedProposal(title string, paths []string, steps ...string) core.ModelResponse {
	var plan []map[string]any
	for _, s := range steps {
		plan = append(plan, map[string]any{"step": s})
	}
	args := map[string]any{"title": title, "summary": "Summary of " + title, "plan": plan}
	if paths != nil {
		args["scope"] = map[string]any{"allowed_paths": paths, "max_files_changed": len(paths)}
	}
	b, _ := json.Marshal(args)
	return core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "call-" + title, Name: "exit_plan_mode", Args: b}}}
}

// progress is a model answer that reports step statuses (merged by step text).
func progress(status map[string]string) core.ModelResponse {
	var plan []map[string]any
	for s, st := range status {
		plan = append(plan, map[string]any{"step": s, "status": st})
	}
	args, _ := json.Marshal(map[string]any{"plan": plan, "merge": true})
	return core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "call-progress", Name: "update_plan", Args: args}}}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// session returns the stored session of alice's conversation conv.
func (e *env) session(user, conv string) core.Session {
	s, err := e.st.Session(context.Background(), address(user, conv).SessionID())
	if err != nil {
		return core.Session{}
	}
	return s
}

// shown returns what a conversation shows, oldest first, for tests.
func (c *Channel) shown(a core.Address) []string {
	c.mu.Lock()
	cv := c.convos[a.SessionID()]
	c.mu.Unlock()
	if cv == nil {
		return nil
	}
	items, _ := cv.snapshot()
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.text + "\n" + string(it.html)
	}
	return out
}
