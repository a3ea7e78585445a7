package adminapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A plan's detail carries its run (fingerprint, changes counted, stop) and never the
// fingerprint's packed file list; a plan with nothing recorded has no "run".
func TestPlanDetailCarriesTheRun(t *testing.T) {
	tree, err := plan.NewTree("abc123", "main", []plan.TreeFile{{Path: "a.go", Size: 3, Hash: "00"}})
	if err != nil {
		t.Fatal(err)
	}
	p := core.Plan{ID: "p1", Version: 2, Run: plan.Run{Tree: tree, Changed: &plan.Changed{Paths: []string{"a.go"}, Files: 1, Lines: 4}}}
	data, err := json.Marshal(ToPlanDetail(p))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{`"run":{"tree":{"head":"abc123","ref":"main","hash":"` + tree.Hash + `","files":1,"bytes":3}`, `"changed":{"paths":["a.go"],"files":1,"lines":4}`} {
		if !strings.Contains(s, want) {
			t.Errorf("detail %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, tree.Packed) || strings.Contains(s, "packed") {
		t.Errorf("detail carries the packed file list: %s", s)
	}
	data, _ = json.Marshal(ToPlanDetail(core.Plan{ID: "p2"}))
	if strings.Contains(string(data), `"run"`) {
		t.Errorf("a plan without a run: %s", data)
	}
}

// planOnly is a Store that holds one plan.
type planOnly struct {
	Store
	p core.Plan
}

func (s planOnly) Plan(_ context.Context, id string) (core.Plan, error) { return s.p, nil }

// The report of a version is in the plan's detail (run.report) and, for the session's
// current plan, in the session view (`sessions show --json`: report); none before it.
func TestViewsCarryTheReport(t *testing.T) {
	code := 3
	r := &plan.Report{Outcome: "completed", Measured: true, Files: []plan.FileLines{{Path: "a.go", Kind: plan.FileChanged, Added: 2, Removed: 1, Counted: true}},
		Steps:   []plan.ReportStep{{Step: "1", Text: "Fix", Status: plan.StepCompleted, Files: []plan.FileLines{}, Commands: []plan.ReportCommand{{Step: "1", Command: "make", ExitCode: &code}}}},
		NotDone: []plan.NotDone{}, Outside: []string{}}
	p := core.Plan{ID: "p1", Version: 2, Status: core.PlanCompleted, Run: plan.Run{Report: r}}
	data, err := json.Marshal(ToPlanDetail(p))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"report":{"outcome":"completed","at":"0001-01-01T00:00:00Z","measured":true,"steps":[{"step":"1","text":"Fix","status":"completed","files":[],"commands":[{"step":"1","command":"make","exit_code":3}]}],"files":[{"path":"a.go","kind":"changed","added":2,"removed":1,"counted":true}],"not_done":[],"outside":[]}`; !strings.Contains(string(data), want) {
		t.Errorf("detail %s lacks %s", data, want)
	}
	j, err := SessionView(t.Context(), planOnly{p: p}, core.Session{ID: "s", PlanID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Report != r {
		t.Errorf("session view's report %+v", j.Report)
	}
	p.Run.Report = nil
	j, _ = SessionView(t.Context(), planOnly{p: p}, core.Session{ID: "s", PlanID: "p1"})
	if data, _ := json.Marshal(j); strings.Contains(string(data), `"report"`) {
		t.Errorf("a session whose plan has no report: %s", data)
	}
}
