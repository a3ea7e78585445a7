package adminapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A stopped execution shows in the session's view (`sessions show --json` and the admin
// API) as "stop" and in the plan's as run.stop; a session whose plan runs has no "stop".
func TestSessionViewShowsTheStop(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	e.say("/plan accept")
	if got := e.session(); got.Phase != core.PhaseExecuting {
		t.Fatalf("setup: phase %s", got.Phase)
	}
	_, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID, "")
	if strings.Contains(body, `"stop"`) {
		t.Fatalf("a running plan shows a stop: %s", body)
	}
	p, err := e.st.Plan(context.Background(), s.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	p.Run.Stop = &plan.Stop{Kind: plan.StopWorkspaceDrifted, Message: "Stopped: the workspace changed outside my calls.", At: e.clock}
	if _, err := e.st.Commit(context.Background(), core.Change{SessionID: s.ID, Plans: []core.Plan{p}}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := e.do("GET", "/api/v1/sessions/"+s.ID, "")
	var one adminapi.SessionJSON
	decode(t, body, &one)
	if code != 200 || one.Stop == nil || one.Stop.Kind != plan.StopWorkspaceDrifted || !one.Stop.At.Equal(e.clock) {
		t.Fatalf("session view: %d %s", code, body)
	}
	code, body, _ = e.do("GET", "/api/v1/plans/"+p.ID, "")
	var pd adminapi.PlanDetailJSON
	decode(t, body, &pd)
	if code != 200 || pd.Run.Stop == nil || pd.Run.Stop.Kind != plan.StopWorkspaceDrifted {
		t.Fatalf("plan view: %d %s", code, body)
	}
}
