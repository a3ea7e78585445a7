package adminapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/plangate/plangate/adminapi"
	"github.com/plangate/plangate/core"
)

// A decision that is counted but not yet enough (a 2-of-M policy) is a success with the
// engine's progress text, not a conflict; the session shows the approvals.
func TestCountedApprovalIsSuccess(t *testing.T) {
	e := newEnv(t, token, func(c *core.Config) {
		c.Policies = []core.Policy{{Approvers: []string{"telegram:42", "telegram:43"}, Required: 2, RequesterMayApprove: true}}
	})
	s := e.pending()
	dec := "/api/v1/sessions/" + s.ID + "/decisions"
	code, body, _ := e.do("POST", dec, `{"action":"accept","approval_id":"`+s.ApprovalID+`","by":"ops"}`)
	if code != http.StatusOK {
		t.Fatalf("counted approval: %d %s", code, body)
	}
	var v adminapi.SessionJSON
	decode(t, body, &v)
	if v.Phase != core.PhaseAwaitingApproval || !strings.Contains(v.Reply, "1 of 2 approvals (admin:ops)") ||
		len(v.Approvals) != 1 || v.Approvals[0].By != "admin:ops" || v.Approvals[0].Version != 1 {
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
