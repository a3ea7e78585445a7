// Package adminapi is plangate's admin API (docs/design.md §10): sessions, their audit
// events and plans as JSON, the replies the outbox gave up (each list in keyset pages), the
// API's own OpenAPI 3.1 document, and the two changes an operator may make — a session's mode
// and a decision on a plan. Reads come from the store; changes are messages to the real
// engine, exactly as a person's command or button click, signed "admin:<name>" (the name
// of the bearer token used), so the engine's rules (stale ids, phases, auditing, one
// approval per person) apply unchanged. The routes live behind httpserver's admin bearer
// check.
package adminapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// Store is the part of the store the API reads; *store.Store satisfies it.
type Store interface {
	Session(ctx context.Context, id string) (core.Session, error)
	// SessionsAfter is a page of the sessions in phase ("" = all), most recently updated
	// first (ties by id), after the one with updated and id (id "" = from the first).
	SessionsAfter(ctx context.Context, phase core.Phase, updated time.Time, id string, limit int) ([]core.Session, error)
	Plan(ctx context.Context, id string) (core.Plan, error)
	// EventsAfter is a page of a session's audit rows, oldest first, with ids above after.
	EventsAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error)
	// DroppedOutbox lists the replies given up, newest first, below id before (at most limit).
	DroppedOutbox(ctx context.Context, before int64, limit int) ([]core.Outgoing, error)
}

// Engine takes the API's changes; *engine.Engine satisfies it. The context given is not the
// request's: the work a change starts (an agent turn after an accept) outlives the request.
type Engine interface {
	Enqueue(ctx context.Context, m core.Message) <-chan error
}

// Deps are the API's ports. Tap must be the engine's Sender (or wrap it), so the API
// learns the engine's answer to each change. Log and Now may be nil.
type Deps struct {
	Store  Store
	Engine Engine
	Tap    *Tap
	Log    *slog.Logger
	Now    func() time.Time
	// Wait bounds how long a change waits for the engine's answer; 0 = DefaultWait.
	Wait time.Duration
	// Reach is the engine's (engine.Config.Reach), for the grants in plan files served.
	Reach machine.Reach
}

// DefaultWait stays under the HTTP server's write timeout.
const DefaultWait = 20 * time.Second

// API is the admin API.
type API struct{ d Deps }

// New returns the API; it does no I/O.
func New(d Deps) *API {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Wait <= 0 {
		d.Wait = DefaultWait
	}
	return &API{d: d}
}

// route is one admin API route: its method, path, the query parameters it takes and
// its handler. The OpenAPI document describes exactly these (a test holds both to it).
type route struct {
	method, path string
	query        []string
	h            http.HandlerFunc
}

func (a *API) routes() []route {
	page := []string{paramLimit, paramCursor}
	return []route{
		{"GET", "/api/v1/sessions", append([]string{paramPhase}, page...), a.sessions},
		{"GET", "/api/v1/sessions/{id}", nil, a.session},
		{"GET", "/api/v1/sessions/{id}/events", page, a.events},
		{"GET", "/api/v1/plans/{id}", nil, a.plan},
		{"GET", "/api/v1/sessions/{id}/mode", nil, a.getMode},
		{"POST", "/api/v1/sessions/{id}/mode", nil, a.postMode},
		{"POST", "/api/v1/sessions/{id}/decisions", nil, a.decide},
		{"GET", "/api/v1/outbox/dropped", page, a.dropped},
		{"GET", "/api/v1/openapi.json", nil, serveOpenAPI},
	}
}

// Register adds the routes to srv as admin routes: 404 without http.admin_token, 401
// without the bearer token, and only then 405 for a wrong method or 404 for an unknown
// path, so without the token nothing tells that the API exists.
func (a *API) Register(srv *httpserver.Server) {
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range a.routes() {
		srv.HandleAdmin(rt.method+" "+rt.path, withQuery(rt.query, rt.h))
		if allowed[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for _, p := range paths {
		allow := strings.Join(allowed[p], ", ")
		if slices.Contains(allowed[p], "GET") {
			allow += ", HEAD" // net/http answers HEAD with the GET route
		}
		srv.HandleAdmin(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			httpserver.WriteError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+allow)
		}))
	}
	srv.HandleAdmin("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteError(w, http.StatusNotFound, "no such admin API route")
	}))
}

func (a *API) sessions(w http.ResponseWriter, r *http.Request) {
	phase := core.Phase(r.URL.Query().Get(paramPhase))
	if phase != "" && !phase.Valid() {
		httpserver.WriteError(w, http.StatusBadRequest, "unknown phase "+quote(string(phase))+"; one of off, planning, awaiting_approval, executing")
		return
	}
	list := "sessions?phase=" + string(phase)
	p, ok := readPage(w, r, list, func(c cursor) bool {
		_, err := time.Parse(time.RFC3339Nano, c.At)
		return c.ID != "" && err == nil && c.N == 0
	})
	if !ok {
		return
	}
	var after time.Time
	if p.after.ID != "" {
		after, _ = time.Parse(time.RFC3339Nano, p.after.At)
	}
	ss, err := a.d.Store.SessionsAfter(r.Context(), phase, after, p.after.ID, p.limit+1)
	if err != nil {
		a.failed(w, "listing sessions", err)
		return
	}
	ss, next := trim(p, ss, func(s core.Session) cursor {
		return cursor{List: list, At: s.UpdatedAt.UTC().Format(time.RFC3339Nano), ID: s.ID}
	})
	out := Page[SessionJSON]{Items: []SessionJSON{}, NextCursor: next}
	for _, s := range ss {
		v, err := SessionView(r.Context(), a.d.Store, s)
		if err != nil {
			a.failed(w, "listing sessions", err)
			return
		}
		out.Items = append(out.Items, v)
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
}

func (a *API) session(w http.ResponseWriter, r *http.Request) {
	s, ok := a.load(w, r)
	if !ok {
		return
	}
	a.writeSession(w, r.Context(), s.ID)
}

func (a *API) events(w http.ResponseWriter, r *http.Request) {
	s, ok := a.load(w, r)
	if !ok {
		return
	}
	list := "events:" + s.ID
	p, ok := readPage(w, r, list, idCursor)
	if !ok {
		return
	}
	evs, err := a.d.Store.EventsAfter(r.Context(), s.ID, p.after.N, p.limit+1)
	if err != nil {
		a.failed(w, "loading events", err)
		return
	}
	evs, next := trim(p, evs, func(e core.Event) cursor { return cursor{List: list, N: e.ID} })
	out := Page[EventJSON]{Items: make([]EventJSON, 0, len(evs)), NextCursor: next}
	for _, e := range evs {
		out.Items = append(out.Items, ToEventJSON(e))
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
}

func (a *API) plan(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := a.d.Store.Plan(r.Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		httpserver.WriteError(w, http.StatusNotFound, "no plan "+quote(id))
		return
	}
	if err != nil {
		a.failed(w, "loading a plan", err)
		return
	}
	if !wantsMarkdown(r) {
		httpserver.WriteJSON(w, http.StatusOK, ToPlanDetail(p))
		return
	}
	s, err := a.d.Store.Session(r.Context(), p.SessionID)
	if err != nil {
		a.failed(w, "loading a plan's session", err)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(machine.RenderPlanMarkdown(p, s.Phase, s.Address.Chat, a.d.Reach))
}

// wantsMarkdown: the client's Accept names text/markdown (JSON stays the default).
func wantsMarkdown(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/markdown") {
			return true
		}
	}
	return false
}

// load reads the session of the path's {id}; on failure it has answered (404 or 500).
func (a *API) load(w http.ResponseWriter, r *http.Request) (core.Session, bool) {
	id := r.PathValue("id")
	s, err := a.d.Store.Session(r.Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		httpserver.WriteError(w, http.StatusNotFound, "no session "+quote(id))
		return s, false
	}
	if err != nil {
		a.failed(w, "loading a session", err)
		return s, false
	}
	return s, true
}

// writeSession answers 200 with the session as stored now.
func (a *API) writeSession(w http.ResponseWriter, ctx context.Context, id string, reply ...string) {
	s, err := a.d.Store.Session(ctx, id)
	if err != nil {
		a.failed(w, "loading a session", err)
		return
	}
	v, err := SessionView(ctx, a.d.Store, s)
	if err != nil {
		a.failed(w, "loading a session", err)
		return
	}
	if len(reply) > 0 {
		v.Reply = reply[0]
	}
	httpserver.WriteJSON(w, http.StatusOK, v)
}

// failed logs err (which may name paths or ids, never a secret) and answers 500 without it.
func (a *API) failed(w http.ResponseWriter, what string, err error) {
	a.d.Log.Error("admin api: "+what, "err", err)
	httpserver.WriteError(w, http.StatusInternalServerError, what+" failed; details are in the gateway log")
}

// quote shows a value from the request in a reason, cut short and on one line.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + strings.Join(strings.Fields(s), " ") + `"`
}
