package adminapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// The document served is the file the tests validate against, it is OpenAPI 3.1, and it
// describes exactly the routes the API registers, each with the query parameters the
// route takes, and exactly the error codes the server writes.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, token)
	code, body, hdr := e.do("GET", "/api/v1/openapi.json", "")
	if code != 200 || body != string(c.raw) || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d %s, want the document openapi.json as JSON", code, hdr.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	decode(t, body, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if got, want := doc.Components.Schemas.Error.Properties.Code.Enum, httpserver.ErrorCodes(); !slices.Equal(got, want) {
		t.Errorf("the Error schema's codes %q, want the server's %q", got, want)
	}
	routes := adminapi.Routes()
	for pattern, query := range routes {
		documented, ok := c.params[pattern]
		if !ok {
			t.Errorf("route %s is not in the OpenAPI document", pattern)
			continue
		}
		if !slices.Equal(slices.Sorted(slices.Values(query)), slices.Sorted(slices.Values(documented))) {
			t.Errorf("%s takes the query parameters %q, the document says %q", pattern, query, documented)
		}
	}
	for pattern := range c.params {
		if _, ok := routes[pattern]; !ok {
			t.Errorf("the document describes %s, which the API does not serve", pattern)
		}
	}
}

// refusingEngine answers every change with a refusal, as the engine does for a decision
// it will not make.
type refusingEngine struct{ tap *adminapi.Tap }

func (r *refusingEngine) Enqueue(ctx context.Context, m core.Message) <-chan error {
	done := make(chan error, 1)
	_, _ = r.tap.Send(ctx, core.Reply{To: m.Address, InReplyTo: m.ID, Kind: core.ReplyNotice, Text: "That can't change now."})
	done <- nil
	return done
}

// Every route answers each of its documented statuses as the document says (env.do
// validates each answer; TestMain checks that every documented answer was seen).
func TestEveryRouteAnswersAsDocumented(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	id := s.ID
	big := `{"by":"` + strings.Repeat("x", 5000) + `"}`
	type req struct {
		method, path, body string
		code               int
	}
	run := func(what string, reqs []req, hdr ...string) {
		t.Helper()
		for _, r := range reqs {
			if code, body, _ := e.do(r.method, r.path, r.body, hdr...); code != r.code {
				t.Errorf("%s: %s %s: %d %s, want %d", what, r.method, r.path, code, body, r.code)
			}
		}
	}
	routes := []req{
		{"GET", "/api/v1/sessions", "", 200}, {"GET", "/api/v1/sessions/" + id, "", 200},
		{"GET", "/api/v1/sessions/" + id + "/events", "", 200}, {"GET", "/api/v1/plans/" + s.PlanID, "", 200},
		{"GET", "/api/v1/sessions/" + id + "/mode", "", 200}, {"GET", "/api/v1/outbox/dropped", "", 200},
		{"GET", "/api/v1/openapi.json", "", 200},
		{"POST", "/api/v1/sessions/" + id + "/mode", `{"plan_mode":"on"}`, 200},
		{"POST", "/api/v1/sessions/" + id + "/decisions", `{"action":"accept","approval_id":"nope"}`, 409},
	}
	run("as documented", routes)
	if code, body, _ := e.do("GET", "/api/v1/plans/"+s.PlanID, "", "Accept", "text/markdown"); code != 200 || !strings.Contains(body, "Fix the login") {
		t.Errorf("plan markdown: %d %s", code, body)
	}
	var unauthorized, unknownParam []req
	for _, r := range routes {
		unauthorized = append(unauthorized, req{r.method, r.path, r.body, 401})
		unknownParam = append(unknownParam, req{r.method, r.path + "?verbose=1", r.body, 400})
	}
	run("without the token", unauthorized, "Authorization", "")
	run("an unknown query parameter", unknownParam)
	run("not found", []req{
		{"GET", "/api/v1/sessions/telegram:bot:999", "", 404}, {"GET", "/api/v1/sessions/telegram:bot:999/events", "", 404},
		{"GET", "/api/v1/plans/nope", "", 404}, {"GET", "/api/v1/sessions/telegram:bot:999/mode", "", 404},
		{"POST", "/api/v1/sessions/telegram:bot:999/mode", `{}`, 404},
		{"POST", "/api/v1/sessions/telegram:bot:999/decisions", `{"action":"accept","approval_id":"x"}`, 404},
		{"GET", "/api/v1/nothing", "", 404}, {"DELETE", "/api/v1/sessions", "", 405},
	})
	run("too large", []req{{"POST", "/api/v1/sessions/" + id + "/mode", big, 413}, {"POST", "/api/v1/sessions/" + id + "/decisions", big, 413}})

	before := e.session()
	if before.Version != s.Version || before.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("refused requests (and a mode asked as it is) changed the session: %+v", before)
	}

	// The engine refusing, failing and not answering a mode change.
	refuser := &refusingEngine{}
	refuser.tap = e.withEngine(refuser, time.Hour)
	run("refused", []req{{"POST", "/api/v1/sessions/" + id + "/mode", `{"plan_mode":"off"}`, 409}})
	e.withEngine(stuckEngine{done: make(chan error)}, time.Millisecond)
	run("no answer", []req{{"POST", "/api/v1/sessions/" + id + "/mode", `{"plan_mode":"off"}`, 504}})
	failed := stuckEngine{done: make(chan error, 1)}
	failed.done <- context.DeadlineExceeded
	e.withEngine(failed, time.Hour)
	run("engine failed", []req{{"POST", "/api/v1/sessions/" + id + "/mode", `{"plan_mode":"off"}`, 500}})
	if got := e.session(); got.Version != before.Version {
		t.Fatalf("a refused or failed change changed the session: %+v", got)
	}

	// A store that fails: every read is 500, without the store's error.
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []req{
		{"GET", "/api/v1/sessions", "", 500}, {"GET", "/api/v1/sessions/" + id, "", 500},
		{"GET", "/api/v1/sessions/" + id + "/events", "", 500}, {"GET", "/api/v1/plans/" + s.PlanID, "", 500},
		{"GET", "/api/v1/sessions/" + id + "/mode", "", 500}, {"GET", "/api/v1/outbox/dropped", "", 500},
		{"POST", "/api/v1/sessions/" + id + "/mode", `{"plan_mode":"off"}`, 500},
		{"POST", "/api/v1/sessions/" + id + "/decisions", `{"action":"accept","approval_id":"x"}`, 500},
	} {
		code, body, _ := e.do(r.method, r.path, r.body)
		if code != 500 || !strings.Contains(body, "details are in the gateway log") || strings.Contains(body, "closed") {
			t.Errorf("store closed: %s %s: %d %s, want 500 without the store's error", r.method, r.path, code, body)
		}
	}
}

// cursorOf is the next_cursor of a page body; "" on the last page.
func cursorOf(t *testing.T, body string) string {
	t.Helper()
	var p adminapi.Page[json.RawMessage]
	decode(t, body, &p)
	if p.NextCursor == nil {
		return ""
	}
	return *p.NextCursor
}

// Sessions are paged in the store's order, by a cursor that keeps its place when
// sessions are added between two pages, and stays with its list and filter.
func TestSessionsPages(t *testing.T) {
	e := newEnv(t, token)
	ctx := context.Background()
	put := func(id string, minutes int, phase core.Phase) {
		t.Helper()
		se := core.Session{ID: id, Address: core.Address{Channel: "terminal", Account: "local", Chat: id}, Phase: phase,
			CreatedAt: e.clock, UpdatedAt: e.clock.Add(time.Duration(minutes) * time.Minute)}
		if _, err := e.st.Commit(ctx, core.Change{Session: &se}); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		put(id, i, core.PhasePlanning) // s5 is the newest
	}
	page := func(query string) ([]string, string) {
		t.Helper()
		code, body, _ := e.do("GET", "/api/v1/sessions"+query, "")
		if code != 200 {
			t.Fatalf("GET /api/v1/sessions%s: %d %s", query, code, body)
		}
		var p adminapi.Page[adminapi.SessionJSON]
		decode(t, body, &p)
		var ids []string
		for _, s := range p.Items {
			ids = append(ids, s.ID)
		}
		return ids, cursorOf(t, body)
	}
	first, next := page("?limit=2")
	if !slices.Equal(first, []string{"s5", "s4"}) || next == "" {
		t.Fatalf("first page %v, next %q", first, next)
	}
	put("s9", 10, core.PhasePlanning) // newer than the cursor: not on the later pages
	put("s0", -1, core.PhasePlanning) // older than every one: on the last page
	second, next := page("?limit=2&cursor=" + next)
	third, last := page("?limit=2&cursor=" + next)
	if !slices.Equal(second, []string{"s3", "s2"}) || !slices.Equal(third, []string{"s1", "s0"}) {
		t.Fatalf("later pages %v, %v", second, third)
	}
	if last != "" {
		if rest, end := page("?limit=2&cursor=" + last); len(rest) != 0 || end != "" {
			t.Fatalf("after the last session: %v %q", rest, end)
		}
	}
	all, end := page("")
	if len(all) != 7 || end != "" || all[0] != "s9" {
		t.Fatalf("the default page: %v %q, want all seven, newest first", all, end)
	}

	put("s6", 3, core.PhaseOff)
	off, next := page("?phase=off&limit=1")
	if !slices.Equal(off, []string{"s6"}) || next != "" {
		t.Fatalf("phase=off: %v %q, want [s6] and no more", off, next)
	}
	_, planningNext := page("?phase=planning&limit=1")
	_, eventsNext := "", ""
	s := e.pending()
	for range 3 {
		e.say("/plan")
	}
	code, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID+"/events?limit=1", "")
	if code != 200 {
		t.Fatalf("events: %d %s", code, body)
	}
	eventsNext = cursorOf(t, body)
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"l":"sessions?phase=","n":7}`))
	for _, bad := range []struct{ query, why string }{
		{"?limit=0", "limit \"0\" is not a whole number from 1 to 1000"},
		{"?limit=1001", "from 1 to 1000"},
		{"?limit=ten", "from 1 to 1000"},
		{"?limit=1&limit=2", `query parameter "limit" is given 2 times; give it once`},
		{"?page=2", `unknown query parameter "page"; this route takes phase, limit, cursor`},
		{"?cursor=not-a-cursor", "is not one this API gave; leave it out to start from the first page"},
		{"?cursor=" + forged, "is not one this API gave"},
		{"?cursor=" + planningNext, "belongs to another list or filter"},
		{"?phase=off&cursor=" + planningNext, "belongs to another list or filter"},
		{"?cursor=" + eventsNext, "belongs to another list or filter"},
		{"?limit=%zz", "malformed query string"},
	} {
		code, body, _ := e.do("GET", "/api/v1/sessions"+bad.query, "")
		var got httpserver.ErrorJSON
		decode(t, body, &got)
		if code != 400 || got.Code != "bad_request" || !strings.Contains(got.Error, bad.why) {
			t.Errorf("GET /api/v1/sessions%s: %d %s, want 400 with %q", bad.query, code, body, bad.why)
		}
	}
}

// A session's events are paged oldest first; a cursor belongs to its session.
func TestEventsAndDroppedPages(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	e.say("/plan auto on")
	e.say("/plan auto off")
	whole := e.events()
	if len(whole) < 4 {
		t.Fatalf("events %+v: want at least four", whole)
	}
	var ids []int64
	cur := ""
	for range len(whole) + 1 {
		q := "?limit=3"
		if cur != "" {
			q += "&cursor=" + cur
		}
		code, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID+"/events"+q, "")
		var p adminapi.Page[adminapi.EventJSON]
		decode(t, body, &p)
		if code != 200 || len(p.Items) > 3 {
			t.Fatalf("events%s: %d %s", q, code, body)
		}
		for _, ev := range p.Items {
			ids = append(ids, ev.ID)
		}
		if cur = cursorOf(t, body); cur == "" {
			break
		}
	}
	var want []int64
	for _, ev := range whole {
		want = append(want, ev.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("paged events %v, want %v", ids, want)
	}

	code, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID+"/events?limit=1", "")
	next := cursorOf(t, body)
	other := core.Session{ID: "terminal:local:x", Address: core.Address{Channel: "terminal", Account: "local", Chat: "x"}, Phase: core.PhaseOff,
		CreatedAt: e.clock, UpdatedAt: e.clock}
	if _, err := e.st.Commit(context.Background(), core.Change{Session: &other}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/sessions/" + other.ID + "/events", "/api/v1/outbox/dropped"} {
		code, body, _ = e.do("GET", path+"?cursor="+next, "")
		if code != 400 || !strings.Contains(body, "belongs to another list or filter") {
			t.Errorf("GET %s with the events cursor of %s: %d %s", path, s.ID, code, body)
		}
	}
	// Refused query parameters change nothing, on a change as on a read.
	before := e.session()
	code, body, _ = e.do("POST", "/api/v1/sessions/"+s.ID+"/mode?dry_run=1", `{"plan_mode":"off"}`)
	if code != 400 || !strings.Contains(body, `unknown query parameter \"dry_run\"; this route takes none`) {
		t.Fatalf("POST mode?dry_run=1: %d %s", code, body)
	}
	if got := e.session(); got.Version != before.Version || got.Phase != before.Phase {
		t.Fatalf("a refused request changed the session: %+v", got)
	}
}
