package adminapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
)

// A decision that is counted but not yet enough (a 2-of-M policy) is a success with the
// engine's progress text, not a conflict; the session shows the approvals.
func TestCountedApprovalIsSuccess(t *testing.T) {
	e := newEnv(t, token, func(c *engine.Config) {
		c.Policies = []machine.Policy{{Approvers: []string{"telegram:42", "telegram:43"}, Required: 2, RequesterMayApprove: true}}
	})
	s := e.pending()
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	code, body, _ := e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`","by":"ops"}`)
	if code != http.StatusOK {
		t.Fatalf("counted approval: %d %s", code, body)
	}
	var v adminapi.SessionJSON
	decode(t, body, &v)
	if v.Phase != core.PhaseAwaitingApproval || !strings.Contains(v.Reply, "1 of 2 approvals (ops via admin:admin)") ||
		len(v.Approvals) != 1 || v.Approvals[0].By != "admin:admin" || v.Approvals[0].Version != 1 {
		t.Fatalf("counted approval: phase %s, reply %q, approvals %+v", v.Phase, v.Reply, v.Approvals)
	}
	// The same operator twice is a refusal: 409 with the engine's words.
	code, body, _ = e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`","by":"ops"}`)
	if code != http.StatusConflict || !strings.Contains(body, "already approved") {
		t.Fatalf("second approval by the same operator: %d %s", code, body)
	}
	e.say("/plan accept") // alice (telegram:42) is the second approver
	if got := e.session(); got.Phase != core.PhaseExecuting {
		t.Fatalf("after the second approver: phase %s", got.Phase)
	}
}

// TestOneTokenIsOnePerson: under required: 2, two decisions from one admin token that
// sign with different "by" count once: the second is refused, the plan stays pending in
// the store with one approval by the token's identity ("by" is only its note). A second
// token is a second person and settles the plan.
func TestOneTokenIsOnePerson(t *testing.T) {
	const tok1, tok2 = "ops1-token-0123456789", "ops2-token-0123456789"
	e := newEnvHTTP(t, httpserver.Config{AdminTokens: []httpserver.AdminToken{{Name: "ops1", Token: tok1}, {Name: "ops2", Token: tok2}}},
		func(c *engine.Config) {
			c.Policies = []machine.Policy{{Approvers: []string{"telegram:42"}, Required: 2, RequesterMayApprove: true}}
		})
	s := e.pending()
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	accept := func(tok, by string) (int, string) {
		code, body, _ := e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`","by":"`+by+`"}`, "Authorization", "Bearer "+tok)
		return code, body
	}
	if code, body := accept(tok1, "alice"); code != http.StatusOK {
		t.Fatalf("first approval: %d %s", code, body)
	}
	if code, body := accept(tok1, "bob"); code != http.StatusConflict || !strings.Contains(body, "already approved") {
		t.Fatalf("the same token signing as someone else: %d %s, want 409 already approved", code, body)
	}
	stored := func() core.Plan {
		t.Helper()
		p, err := e.st.Plan(context.Background(), s.PlanID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := stored()
	if got := e.session(); p.Status != core.PlanPending || got.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("after two decisions of one token: plan %s, phase %s; want pending, awaiting_approval", p.Status, got.Phase)
	}
	if len(p.Approvals) != 1 || p.Approvals[0].By != "admin:ops1" || p.Approvals[0].ByName != "alice via admin:ops1" {
		t.Fatalf("stored approvals %+v, want one by admin:ops1 (alice's note)", p.Approvals)
	}
	if code, body := accept(tok2, "alice"); code != http.StatusOK {
		t.Fatalf("second token: %d %s", code, body)
	}
	if p := stored(); p.Status != core.PlanAccepted || len(p.Approvals) != 2 || p.Approvals[1].By != "admin:ops2" {
		t.Fatalf("after the second token: plan %s, approvals %+v", p.Status, p.Approvals)
	}
	if got := e.session(); got.Phase != core.PhaseExecuting {
		t.Fatalf("after the second token: phase %s", got.Phase)
	}
}

// TestAdminTokenSigningAsTwoCountsOnce: the single admin_token signing "by": ops1 and
// then "by": ops2 under required: 2 is one approver: the second decision is refused and
// the stored plan stays pending with one approval, by admin:admin.
func TestAdminTokenSigningAsTwoCountsOnce(t *testing.T) {
	e := newEnv(t, token, func(c *engine.Config) {
		c.Policies = []machine.Policy{{Approvers: []string{"telegram:42"}, Required: 2, RequesterMayApprove: true}}
	})
	s := e.pending()
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	for _, by := range []string{"ops1", "ops2"} {
		e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`","by":"`+by+`"}`)
	}
	p, err := e.st.Plan(context.Background(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.session(); p.Status != core.PlanPending || got.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("one token signing as ops1 and ops2: plan %s, phase %s; want pending, awaiting_approval", p.Status, got.Phase)
	}
	if len(p.Approvals) != 1 || p.Approvals[0].By != "admin:admin" {
		t.Fatalf("stored approvals %+v, want one by admin:admin", p.Approvals)
	}
}
