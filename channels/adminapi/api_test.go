package adminapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

func TestNoAdminTokenIsNotFoundEverywhere(t *testing.T) {
	e := newEnv(t, "")
	e.pending()
	id := addr.SessionID()
	for _, r := range [][2]string{{"GET", "/api/v1/sessions"}, {"GET", "/api/v1/sessions/" + id}, {"DELETE", "/api/v1/sessions/" + id},
		{"POST", "/api/v1/sessions/" + id + "/decisions"}, {"GET", "/api/v1/nothing"}} {
		if code, body, _ := e.do(r[0], r[1], `{}`); code != 404 {
			t.Errorf("%s %s without admin_token: %d %s, want 404", r[0], r[1], code, body)
		}
	}
}

func TestWrongOrMissingTokenIs401AndChangesNothing(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	body := `{"action":"accept","approval_id":"` + s.ApprovalID + `","by":"ops"}`
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", token} {
		code, _, hdr := e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", body, "Authorization", auth)
		if code != 401 || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d, want 401 with WWW-Authenticate", auth, code)
		}
	}
	if got := e.session(); got.Phase != core.PhaseAwaitingApproval || got.Version != s.Version {
		t.Fatalf("a refused request changed the session: %+v", got)
	}
}

func TestSessionsListFilterAndShow(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	var list adminapi.Page[adminapi.SessionJSON]
	code, body, _ := e.do("GET", "/api/v1/sessions", "")
	decode(t, body, &list)
	if code != 200 || len(list.Items) != 1 || list.Items[0].ID != s.ID || list.Items[0].Plan == nil || list.Items[0].Plan.Title != "Fix the login" || list.NextCursor != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body, _ = e.do("GET", "/api/v1/sessions?phase=awaiting_approval", "")
	decode(t, body, &list)
	if code != 200 || len(list.Items) != 1 {
		t.Fatalf("phase=awaiting_approval: %d %s", code, body)
	}
	code, body, _ = e.do("GET", "/api/v1/sessions?phase=off", "")
	if code != 200 || !strings.Contains(body, `"items": []`) {
		t.Fatalf("phase=off: %d %s, want no items", code, body)
	}
	if code, body, _ = e.do("GET", "/api/v1/sessions?phase=asleep", ""); code != 400 || !strings.Contains(body, "unknown phase") {
		t.Fatalf("phase=asleep: %d %s", code, body)
	}

	code, body, _ = e.do("GET", "/api/v1/sessions/"+s.ID, "")
	var one adminapi.SessionJSON
	decode(t, body, &one)
	want, err := adminapi.SessionView(context.Background(), e.st, s)
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || one.ID != want.ID || one.Phase != core.PhaseAwaitingApproval || one.Version != want.Version ||
		one.Address.Chat != "100" || one.Plan == nil || len(one.Plan.Steps) != 2 || one.CreatedAt != want.CreatedAt {
		t.Fatalf("show: %d %s\nwant %+v", code, body, want)
	}
	for _, field := range []string{`"auto_approve"`, `"rejection_count"`, `"owner"`, `"pending_question"`, `"updated_at"`} {
		if !strings.Contains(body, field) {
			t.Errorf("show lacks %s: %s", field, body)
		}
	}
	if code, body, _ = e.do("GET", "/api/v1/sessions/telegram:bot:999", ""); code != 404 || !strings.Contains(body, "no session") {
		t.Fatalf("unknown session: %d %s", code, body)
	}
}

func TestEventsAndPlanAsJSONAndMarkdown(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	if ev := lastOf(t, e.events(), core.EventProposed); ev.Actor != core.AgentActor || ev.PlanVersion != 1 || ev.At == "" {
		t.Fatalf("proposed event: %+v", ev)
	}
	code, body, _ := e.do("GET", "/api/v1/plans/"+s.PlanID, "")
	var p adminapi.PlanDetailJSON
	decode(t, body, &p)
	if code != 200 || p.ID != s.PlanID || p.Status != core.PlanPending || p.Body.Title != "Fix the login" || len(p.Steps) != 2 {
		t.Fatalf("plan JSON: %d %s", code, body)
	}
	code, body, hdr := e.do("GET", "/api/v1/plans/"+s.PlanID, "", "Accept", "text/markdown")
	stored, err := e.st.Plan(context.Background(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/markdown") ||
		body != string(machine.RenderPlanMarkdown(stored, s.Phase, s.Address.Chat, machine.Reach{})) {
		t.Fatalf("plan markdown: %d %s %q", code, hdr.Get("Content-Type"), body)
	}
	if code, body, _ = e.do("GET", "/api/v1/plans/nope", ""); code != 404 || !strings.Contains(body, "no plan") {
		t.Fatalf("unknown plan: %d %s", code, body)
	}
	if code, _, _ = e.do("GET", "/api/v1/sessions/telegram:bot:999/events", ""); code != 404 {
		t.Fatalf("events of an unknown session: %d", code)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	for _, tc := range []struct {
		method, path, body string
		code               int
		why                string
	}{
		{"DELETE", "/api/v1/sessions/" + s.ID, "", 405, "not allowed"},
		{"GET", dec, "", 405, "POST"},
		{"PUT", "/api/v1/sessions/" + s.ID + "/mode", "{}", 405, "GET, POST"},
		{"GET", "/api/v1/nothing", "", 404, "no such"},
		{"POST", dec, `{"action":`, 400, "malformed JSON"},
		{"POST", dec, `{"action":"accept","approval_id":"x","colour":"red"}`, 400, "unknown field"},
		{"POST", dec, `{"action":"accept","approval_id":"` + s.ApprovalID + `","by":"` + strings.Repeat("x", 5000) + `"}`, 413, "max_body"},
		{"POST", dec, `{"action":"maybe","approval_id":"x"}`, 400, `"action" must be`},
		{"POST", dec, `{"action":"accept"}`, 400, "approval_id"},
		{"POST", dec, `{"action":"revise","approval_id":"` + s.ApprovalID + `"}`, 400, "feedback"},
		{"POST", dec, `{"action":"accept","approval_id":"` + s.ApprovalID + `","by":"ops team"}`, 400, `"by" must be`},
		{"POST", "/api/v1/sessions/telegram:bot:999/decisions", `{"action":"accept","approval_id":"x"}`, 404, "no session"},
		{"POST", "/api/v1/sessions/" + s.ID + "/mode", `{"plan_mode":"maybe"}`, 400, "plan_mode"},
		{"POST", "/api/v1/sessions/" + s.ID + "/mode", `{"auto_approve":false,"confirm_strategy":"auto"}`, 400, "contradicts"},
		{"POST", "/api/v1/sessions/" + s.ID + "/mode", `{"confirm_strategy":"lax"}`, 400, "confirm_strategy"},
	} {
		code, body, _ := e.do(tc.method, tc.path, tc.body)
		var e httpserver.ErrorJSON
		decode(t, body, &e)
		if code != tc.code || !strings.Contains(e.Error, tc.why) || strings.Contains(e.Error, "\n") || e.Code != httpserver.ErrorCode(tc.code) {
			t.Errorf("%s %s %.40s: %d %s, want %d with %q", tc.method, tc.path, tc.body, code, body, tc.code, tc.why)
		}
	}
	if got := e.session(); got.Version != s.Version || got.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("bad requests changed the session: %+v", got)
	}
}
