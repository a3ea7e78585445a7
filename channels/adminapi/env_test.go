package adminapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

const token = "s3cret-admin-token"

// env is the admin API on a real httpserver.Server, over a real store and the real
// engine with a scripted model; replies land in a fake Telegram channel.
type env struct {
	t     *testing.T
	st    *store.Store
	eng   *engine.Engine
	model *channeltest.Model
	chat  *channeltest.Fake
	srv   *httptest.Server
	clock time.Time
	// apiOff: no admin token, so every route is net/http's plain 404, which the OpenAPI
	// document (of the API that is on) does not describe.
	apiOff bool
}

var addr = core.Address{Channel: "telegram", Account: "bot", Chat: "100"}

func newEnv(t *testing.T, adminToken string, opts ...func(*engine.Config)) *env {
	t.Helper()
	return newEnvHTTP(t, httpserver.Config{AdminToken: adminToken}, opts...)
}

// newEnvHTTP is newEnv with the admin tokens of hc.
func newEnvHTTP(t *testing.T, hc httpserver.Config, opts ...func(*engine.Config)) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, st: st, model: channeltest.NewModel(), chat: channeltest.NewFake("telegram"),
		clock: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), apiOff: hc.AdminToken == "" && len(hc.AdminTokens) == 0}
	log := slog.New(slog.DiscardHandler)
	tap := adminapi.NewTap(e.chat)
	cfg := engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, PlanMode: true, Approvers: []string{"telegram:42"}}
	for _, o := range opts {
		o(&cfg)
	}
	e.eng = engine.NewEngine(cfg,
		engine.Deps{Store: st, Model: e.model, Out: tap, Log: log, Now: func() time.Time { return e.clock }})
	hc.MaxBody = 4096
	hs := httpserver.New(hc, nil, log)
	adminapi.New(adminapi.Deps{Store: st, Engine: e.eng, Tap: tap, Log: log, Now: func() time.Time { return e.clock }}).Register(hs)
	e.srv = httptest.NewServer(hs.Handler())
	srv := e.srv // withEngine may replace e.srv
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.eng.Wait(ctx)
	})
	return e
}

// say is a message from the approver (telegram:42) in the chat, handled to the end.
func (e *env) say(text string) {
	e.t.Helper()
	m := core.Message{Address: addr, Sender: core.Person{ID: "42", Name: "alice"}, Text: text, Direct: true, Time: e.clock}
	if err := <-e.eng.Enqueue(context.Background(), m); err != nil {
		e.t.Fatalf("handling %q: %v", text, err)
	}
}

// pending makes the session wait for a decision on a plan and returns it.
func (e *env) pending() core.Session {
	e.t.Helper()
	e.say("/plan on")
	e.model.Push(addr.SessionID(), channeltest.Proposal("Fix the login", "reproduce it", "fix it"))
	e.say("the login is broken")
	return e.session()
}

func (e *env) session() core.Session {
	e.t.Helper()
	s, err := e.st.Session(context.Background(), addr.SessionID())
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// do sends a request with the admin token (unless hdr overrides Authorization) and
// returns the status and body; no body ever contains the token.
func (e *env) do(method, path, body string, hdr ...string) (int, string, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(b), token) {
		e.t.Fatalf("%s %s: the response contains the admin token: %s", method, path, b)
	}
	if !e.apiOff {
		c, err := contract()
		if err != nil {
			e.t.Fatal(err)
		}
		c.check(e.t, method, e.srv.URL+path, body, req.Header, resp.StatusCode, string(b), resp.Header)
	}
	return resp.StatusCode, string(b), resp.Header
}

// decode reads a JSON body into v.
func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
}

// events are the session's audit rows as the API shows them.
func (e *env) events() []adminapi.EventJSON {
	e.t.Helper()
	code, body, _ := e.do("GET", "/api/v1/sessions/"+addr.SessionID()+"/events", "")
	if code != 200 {
		e.t.Fatalf("events: %d %s", code, body)
	}
	var evs adminapi.Page[adminapi.EventJSON]
	decode(e.t, body, &evs)
	if evs.NextCursor != nil {
		e.t.Fatalf("events: more than one page: %s", body)
	}
	return evs.Items
}

// lastOf is the last audit row of kind; it fails the test when there is none.
func lastOf(t *testing.T, evs []adminapi.EventJSON, kind core.EventKind) adminapi.EventJSON {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i]
		}
	}
	t.Fatalf("no %s event in %+v", kind, evs)
	return adminapi.EventJSON{}
}
