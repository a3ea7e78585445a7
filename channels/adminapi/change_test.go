package adminapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

// TestAcceptChangesTheStoreAsAdmin: an accept through the API goes through the engine
// (the approvers list names only telegram:42, yet the operator may decide), is stored,
// audited as admin:admin (the token's name), and the chat is told as after a button click.
func TestAcceptChangesTheStoreAsAdmin(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	var got adminapi.SessionJSON
	_, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID, "")
	decode(t, body, &got)
	if got.ApprovalID != s.ApprovalID || got.ApprovalID == "" {
		t.Fatalf("the session view's approval_id %q, want the pending %q", got.ApprovalID, s.ApprovalID)
	}
	code, body, _ := e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", `{"action":"accept","approval_id":"`+got.ApprovalID+`","by":"ops"}`)
	decode(t, body, &got)
	if code != 200 || got.Phase != core.PhaseExecuting || got.Plan == nil || got.Plan.Status != core.PlanAccepted || got.ApprovalID != "" {
		t.Fatalf("accept: %d %s", code, body)
	}
	p, err := e.st.Plan(context.Background(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != core.PlanAccepted {
		t.Fatalf("stored plan is %s, want accepted", p.Status)
	}
	ev := lastOf(t, e.events(), core.EventAccepted)
	// The actor is the token's identity (admin_token is named "admin"); "by" is a note.
	if ev.Actor.String() != "admin:admin" || ev.Actor != core.AdminActor("admin") || ev.PlanID != s.PlanID {
		t.Fatalf("accepted event: %+v, want actor admin:admin", ev)
	}
	if !e.chatSaw("Accepted plan v1") {
		t.Fatalf("the chat was not told: %+v", e.chat.Replies())
	}

	// The same approval id again is stale now: 409 with the engine's reason, nothing changes.
	before := e.session()
	code, body, _ = e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", `{"action":"revise","approval_id":"`+s.ApprovalID+`","feedback":"smaller","by":"ops"}`)
	if code != 409 || !strings.Contains(body, "error") || len(strings.TrimSpace(body)) < 20 {
		t.Fatalf("stale accept: %d %s, want 409 with a reason", code, body)
	}
	if !strings.Contains(body, `was already decided (accepted by ops via admin:admin); nothing changed`) {
		t.Fatalf("409 reason is not the engine's refusal: %s", body)
	}
	if after := e.session(); after.Phase != before.Phase || after.RejectionCount != 0 {
		t.Fatalf("a stale decision changed the session: %+v", after)
	}
}

// TestUnknownApprovalIs409WithTheEnginesReason: the reason is the refusal the engine
// produced, the plan stays pending, the refusal is audited as admin:admin, and the chat
// is not shown a refusal nobody there asked for.
func TestUnknownApprovalIs409WithTheEnginesReason(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	sent := len(e.chat.Replies())
	code, body, _ := e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", `{"action":"accept","approval_id":"nope","by":"ops"}`)
	var why struct{ Error string }
	decode(t, body, &why)
	if code != 409 || why.Error == "" {
		t.Fatalf("unknown approval: %d %s", code, body)
	}
	if !strings.Contains(why.Error, "no longer valid; nothing changed") {
		t.Fatalf("409 reason %q is not the engine's refusal", why.Error)
	}
	if got := e.session(); got.Phase != core.PhaseAwaitingApproval || got.ApprovalID != s.ApprovalID {
		t.Fatalf("an unknown approval id changed the session: %+v", got)
	}
	if p, _ := e.st.Plan(context.Background(), s.PlanID); p.Status != core.PlanPending {
		t.Fatalf("plan is %s, want still pending", p.Status)
	}
	for _, r := range e.chat.Replies()[sent:] {
		if strings.Contains(r.Text, why.Error) {
			t.Fatalf("the refusal for the operator reached the chat: %+v", r)
		}
	}
	for _, ev := range e.events() {
		if ev.Kind == core.EventRefused && ev.Actor.String() != "admin:admin" {
			t.Fatalf("refusal audited as %q, want admin:admin", ev.Actor)
		}
	}
}

func TestReviseSendsThePlanBack(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	code, body, _ := e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", `{"action":"revise","approval_id":"`+s.ApprovalID+`","feedback":"add a test first","by":"ops"}`)
	var got adminapi.SessionJSON
	decode(t, body, &got)
	if code != 200 || got.RejectionCount != 1 {
		t.Fatalf("revise: %d %s", code, body)
	}
	ev := lastOf(t, e.events(), core.EventRevised)
	if ev.Actor.String() != "admin:admin" || ev.Detail != "add a test first" {
		t.Fatalf("revised event: %+v", ev)
	}
}

// TestModeChangesAreAudited: confirm_strategy auto accepts the pending plan at once (as
// /plan auto on does), strict turns it back, plan_mode off leaves plan mode; each is an
// audit row of the operator, and asking for the current value changes nothing.
func TestModeChangesAreAudited(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	path := "/api/v1/sessions/" + s.ID + "/mode"
	var m adminapi.ModeJSON
	code, body, _ := e.do("GET", path, "")
	decode(t, body, &m)
	if code != 200 || m != (adminapi.ModeJSON{PlanMode: "on", ConfirmStrategy: "strict", Phase: core.PhaseAwaitingApproval}) {
		t.Fatalf("GET mode: %d %s", code, body)
	}

	code, body, _ = e.do("POST", path, `{"confirm_strategy":"auto","by":"ops"}`)
	decode(t, body, &m)
	if code != 200 || !m.AutoApprove || m.ConfirmStrategy != "auto" || m.Phase != core.PhaseExecuting {
		t.Fatalf("confirm_strategy auto: %d %s", code, body)
	}
	evs := e.events()
	if ev := lastOf(t, evs, core.EventAutoChanged); ev.Actor.String() != "admin:admin" {
		t.Fatalf("auto_changed by %q", ev.Actor)
	}
	if ev := lastOf(t, evs, core.EventAutoAccepted); ev.PlanID != s.PlanID {
		t.Fatalf("auto_accepted: %+v", ev)
	}

	// The accept started an agent turn; its commits would move the version under the
	// next check, so let it finish first.
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.eng.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	version := e.session().Version
	if code, body, _ = e.do("POST", path, `{"auto_approve":true,"plan_mode":"on","by":"ops"}`); code != 200 || e.session().Version != version {
		t.Fatalf("asking for the current mode: %d %s, version %d -> %d", code, body, version, e.session().Version)
	}

	code, body, _ = e.do("POST", path, `{"confirm_strategy":"strict","plan_mode":"off"}`)
	decode(t, body, &m)
	if code != 200 || m.AutoApprove || m.PlanMode != "off" || m.Phase != core.PhaseOff {
		t.Fatalf("strict and off: %d %s", code, body)
	}
	evs = e.events()
	if ev := lastOf(t, evs, core.EventAutoChanged); ev.Actor.String() != "admin:admin" || !strings.Contains(ev.Detail, "off") {
		t.Fatalf("auto off: %+v", ev)
	}
	last := evs[len(evs)-1]
	if last.Actor.String() != "admin:admin" {
		t.Fatalf("plan mode off audited as %+v", last)
	}
}

// TestDecisionOnAbandonedPlanIs409: a plan abandoned in the chat (/plan off) can no
// longer be decided through the API; the engine's reason names who ended it.
func TestDecisionOnAbandonedPlanIs409(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	e.say("/plan off")
	code, body, _ := e.do("POST", "/api/v1/sessions/"+s.ID+"/decisions", `{"action":"auto","approval_id":"`+s.ApprovalID+`"}`)
	if code != 409 || !strings.Contains(body, "already decided (abandoned by alice)") {
		t.Fatalf("auto on an abandoned plan: %d %s", code, body)
	}
	if got := e.session(); got.Phase != core.PhaseOff || got.AutoApprove {
		t.Fatalf("a refused decision changed the session: %+v", got)
	}
}

// TestModeRefusalIs409: plan mode disabled in the configuration cannot be turned on
// through the API either; the engine's refusal is the 409's reason.
func TestModeRefusalIs409(t *testing.T) {
	e := newEnv(t, token, func(c *engine.Config) { c.PlanMode = false })
	e.say("hello")
	s := e.session()
	code, body, _ := e.do("POST", "/api/v1/sessions/"+s.ID+"/mode", `{"plan_mode":"on","by":"ops"}`)
	var why struct{ Error string }
	decode(t, body, &why)
	if code != 409 || !strings.Contains(strings.ToLower(why.Error), "plan mode") {
		t.Fatalf("plan_mode on while disabled: %d %s", code, body)
	}
	if got := e.session(); got.Phase != core.PhaseOff {
		t.Fatalf("phase %s, want off", got.Phase)
	}
}

// chatSaw reports whether the chat got a reply containing text, waiting a while for it: a
// decision's replies are delivered from the outbox after the API has answered.
func (e *env) chatSaw(text string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, r := range e.chat.Replies() {
			if strings.Contains(r.Text, text) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
