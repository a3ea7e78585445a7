package adminapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
)

// TestRedTeamOneTokenTwoRoutes: under required: 2, one admin token approves with a
// decision and then tries to settle the plan through the other routes that accept
// proposals (auto-approve on, confirm_strategy auto or off, the "auto" decision, a
// second accept with another "by"): each is refused and the stored plan keeps its one
// approval, pending.
func TestRedTeamOneTokenTwoRoutes(t *testing.T) {
	const tok = "ops1-token-0123456789"
	e := newEnvHTTP(t, httpserver.Config{AdminTokens: []httpserver.AdminToken{{Name: "ops1", Token: tok}}},
		func(c *engine.Config) {
			c.Policies = []machine.Policy{{Approvers: []string{"telegram:42"}, Required: 2, RequesterMayApprove: true}}
		})
	s := e.pending()
	auth := []string{"Authorization", "Bearer " + tok}
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	mode := "/api/v1/sessions/" + s.ID + "/mode"
	if code, body, _ := e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`"}`, auth...); code != http.StatusOK {
		t.Fatalf("first approval: %d %s", code, body)
	}
	for _, try := range []struct{ path, body string }{
		{mode, `{"auto_approve":true}`},
		{mode, `{"confirm_strategy":"auto"}`},
		{mode, `{"confirm_strategy":"off"}`},
		{dec, `{"action":"auto","approval_id":"` + s.ApprovalID + `"}`},
		{dec, `{"action":"accept","approval_id":"` + s.ApprovalID + `","by":"someone-else"}`},
	} {
		code, body, _ := e.do("POST", try.path, try.body, auth...)
		p, err := e.st.Plan(context.Background(), s.PlanID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status == core.PlanAccepted || e.session().Phase == core.PhaseExecuting {
			t.Fatalf("POST %s %s (%d %s): the plan was accepted with one token: approvals %+v", try.path, try.body, code, body, p.Approvals)
		}
		if len(p.Approvals) != 1 || p.Approvals[0].By != "admin:ops1" {
			t.Fatalf("POST %s %s (%d %s): approvals %+v, want the one by admin:ops1", try.path, try.body, code, body, p.Approvals)
		}
	}
}
