package adminapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// FuzzRequests feeds arbitrary bodies to the two request decoders and their checks: they
// never panic, a refused request yields no command, and an accepted one yields only the
// /plan commands and button actions the API is meant to send.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"plan_mode":"on","auto_approve":true,"confirm_strategy":"auto","by":"ops"}`,
		`{"plan_mode":"off","confirm_strategy":"strict"}`,
		`{"auto_approve":false,"confirm_strategy":"off"}`,
		`{"action":"accept","approval_id":"a1","by":"ops"}`,
		`{"action":"revise","approval_id":"a1","feedback":"smaller steps","by":"o.p-s@x"}`,
		`{"action":"auto","approval_id":"a1","by":"ops team"}`,
		`{"plan_mode":"maybe"}`, `{}`, `[]`, `null`, `{"by":"` + strings.Repeat("x", 70) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	sessions := []core.Session{{Phase: core.PhaseOff}, {Phase: core.PhaseAwaitingApproval, AutoApprove: true}}
	known := map[string]bool{"/plan on": true, "/plan off": true, "/plan auto on": true, "/plan auto off": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m modeRequest
		if json.Unmarshal(body, &m) == nil {
			for _, s := range sessions {
				cmds, why := modeCommands(s, m)
				if why != "" && len(cmds) > 0 {
					t.Fatalf("%s: refused (%s) yet commands %q", body, why, cmds)
				}
				if len(cmds) > 2 {
					t.Fatalf("%s: %d commands", body, len(cmds))
				}
				for _, c := range cmds {
					if !known[c] {
						t.Fatalf("%s: unexpected command %q", body, c)
					}
				}
			}
			if by, why := m.By, checkBy(m.By); why == "" && by != "" && !validBy.MatchString(by) {
				t.Fatalf("%s: by %q accepted", body, by)
			}
		}
		var d decisionRequest
		if json.Unmarshal(body, &d) == nil {
			act, why := d.action()
			if why == "" && (act.ApprovalID == "" || (act.Kind != core.ActionAccept && act.Kind != core.ActionRevise && act.Kind != core.ActionAuto)) {
				t.Fatalf("%s: accepted as %+v", body, act)
			}
			if why == "" && act.Kind == core.ActionRevise && act.Value == "" {
				t.Fatalf("%s: a revise without feedback", body)
			}
		}
	})
}
