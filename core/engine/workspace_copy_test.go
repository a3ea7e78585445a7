package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// copied lists the (phase, trigger) rows whose outcome rewrites PLAN.md and PLAN.json,
// with the status the copy then shows: a version becoming accepted, and every change of
// the accepted one (progress, completion, a revise, /plan off, a question that stops
// it). A pending version is never copied: it would replace the contract being carried out.
var copied = map[core.Phase]map[machine.Trigger]core.PlanStatus{
	core.PhasePlanning: {machine.TrigAutoPropose: core.PlanAccepted},
	core.PhaseAwaitingApproval: {machine.TrigAccept: core.PlanAccepted, machine.TrigAutoOn: core.PlanAccepted,
		machine.TrigAutoPropose: core.PlanAccepted},
	core.PhaseExecuting: {machine.TrigUpdate: core.PlanAccepted, machine.TrigComplete: core.PlanCompleted,
		machine.TrigRevise: core.PlanRevised, machine.TrigOff: core.PlanAborted, machine.TrigAsk: core.PlanAccepted},
}

// TestApplyWorkspaceCopyTable runs the whole transition table with workspace_copy on:
// the copy effect comes right after the plan file's, on exactly the rows above, and
// nothing else about the outcome changes.
func TestApplyWorkspaceCopyTable(t *testing.T) {
	for _, p := range machine.Phases() {
		for _, tr := range machine.Triggers() {
			t.Run(fmt.Sprintf("%s/%s", p, tr), func(t *testing.T) {
				s, cur := fixture(p, tr)
				in := input(tr)
				off, err := machine.Apply(s, cur, tr, in)
				if err != nil {
					t.Fatal(err)
				}
				in.Rules.WorkspaceCopy = true
				on, err := machine.Apply(s, cur, tr, in)
				if err != nil {
					t.Fatal(err)
				}
				var copies []machine.Effect
				var rest []machine.EffectKind
				for i, e := range on.Effects {
					if e.Kind != machine.EffWorkspaceCopy {
						rest = append(rest, e.Kind)
						continue
					}
					copies = append(copies, e)
					if i == 0 || (on.Effects[i-1].Kind != machine.EffRefreshFile && on.Effects[i-1].Kind != machine.EffWriteFile) {
						t.Errorf("the copy effect is not right after the plan file's: %v", on.EffectKinds())
					}
				}
				if !slices.Equal(rest, off.EffectKinds()) {
					t.Errorf("with the copy on, the other effects are %v; without it %v", rest, off.EffectKinds())
				}
				want, ok := copied[p][tr]
				switch {
				case !ok && len(copies) > 0:
					t.Errorf("copies plan %s (%s); this row must not touch PLAN.md", copies[0].Plan.ID, copies[0].Plan.Status)
				case ok && len(copies) != 1:
					t.Errorf("%d copy effects, want 1: %v", len(copies), on.EffectKinds())
				case ok && copies[0].Plan.Status != want:
					t.Errorf("the copy shows status %s, want %s", copies[0].Plan.Status, want)
				}
			})
		}
	}
}

// TestPlanCopyDocument: PLAN.json carries the plan as the documented shape: every list
// present, the spec and decision when there are any, the text as it was (no markdown
// escaping, no HTML escaping), and it reads back into the same values.
func TestPlanCopyDocument(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	s := core.Session{ID: "slack:T1:C1", Address: core.Address{Channel: "slack", Account: "T1", Chat: "C1"}, Phase: core.PhaseExecuting}
	p := core.Plan{ID: "p1", Version: 2, Status: core.PlanAccepted, UpdatedAt: at, Requesters: []core.Requester{{By: "slack:U1", Name: "Ann"}},
		Body: plan.Body{Title: "Docs <b> & *stars*", Steps: []plan.Step{
			{ID: "1", Text: "Fix `typos`", Status: plan.StepCompleted, AcceptanceCriteria: []string{"no typos"}, VerifiedCriteria: []string{"no typos"}},
			{ID: "2", Text: "Link", Status: plan.StepInProgress}},
			Scope: plan.Scope{AllowedPaths: []string{"docs/**"}},
			Spec:  &plan.ProductSpec{Overview: "A tidy guide.", Features: []plan.Feature{{Name: "Search", Priority: "high", Complexity: "small"}}}},
		Approvals: []plan.Approval{{By: "slack:U2", At: at, Version: 2}},
		Decision:  &plan.Decision{By: "slack:U3", At: at, Channel: "slack", Outcome: "accepted"}}
	data, err := engine.RenderPlanJSON(s, p)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(data), `"format": 1`, `"version": 2`, `"title": "Docs <b> & *stars*"`, `"text": "Fix `+"`typos`"+`"`,
		`"assumptions": []`, `"forbidden_paths": []`, `"verified_criteria": []`, `"priority": "high"`, `"outcome": "accepted"`)
	var doc engine.PlanDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Session != s.ID || doc.PlanID != "p1" || doc.Status != core.PlanAccepted || len(doc.Steps) != 2 ||
		doc.Steps[1].Status != plan.StepInProgress || doc.Spec == nil || doc.Spec.Features[0].Name != "Search" ||
		len(doc.Approvals) != 1 || doc.Decision.By != "slack:U3" || !doc.UpdatedAt.Equal(at) || len(doc.Requesters) != 1 || doc.Requesters[0].By != "slack:U1" {
		t.Fatalf("PLAN.json read back as %+v", doc)
	}
	// Without a spec or a decision, the keys are left out rather than null.
	p.Body.Spec, p.Decision = nil, nil
	data, _ = engine.RenderPlanJSON(s, p)
	if strings.Contains(string(data), `"spec"`) || strings.Contains(string(data), `"decision"`) {
		t.Fatalf("empty spec or decision written:\n%s", data)
	}
}

// TestIsPlanCopy: the names are matched after cleaning and without case, at the
// workspace root only.
func TestIsPlanCopy(t *testing.T) {
	for rel, want := range map[string]bool{
		"PLAN.md": true, "plan.md": true, "Plan.MD": true, "./PLAN.json": true, "docs/../PLAN.json": true, "plan.JSON": true,
		"docs/PLAN.md": false, "PLAN.md.bak": false, "PLAN": false, "": false,
	} {
		if _, got := core.IsPlanCopy(rel); got != want {
			t.Errorf("IsPlanCopy(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestWritePlanCopyLeavesForeignFilesAlone: a project's own PLAN.md (or PLAN.json) is
// never overwritten; plangate's own copy is, and an empty workspace gets one.
func TestWritePlanCopyLeavesForeignFilesAlone(t *testing.T) {
	s := core.Session{ID: "terminal:local:main"}
	js, err := engine.RenderPlanJSON(s, core.Plan{ID: "p1", Version: 1, Status: core.PlanAccepted})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		files map[string]string
		ok    bool
	}{
		"empty":             {nil, true},
		"own copy":          {map[string]string{"PLAN.md": "old", "PLAN.json": string(js)}, true},
		"project PLAN.md":   {map[string]string{"PLAN.md": "# Our roadmap\n"}, false},
		"project PLAN.json": {map[string]string{"PLAN.json": `{"tasks": []}`}, false},
		"md without json":   {map[string]string{"PLAN.md": "# Version 1 · status: accepted"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := engine.WritePlanCopy(dir, []byte("# new\n"), js)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, engine.ErrForeignPlanCopy)) {
				t.Fatalf("WritePlanCopy = %v, want ok %v", err, tc.ok)
			}
			md, _ := os.ReadFile(filepath.Join(dir, "PLAN.md"))
			switch {
			case tc.ok && string(md) != "# new\n":
				t.Errorf("PLAN.md = %q, want the new copy", md)
			case !tc.ok && string(md) != tc.files["PLAN.md"]:
				t.Errorf("the project's PLAN.md became %q", md)
			}
		})
	}
}

// TestWritePlanCopyKeepsALargeCopyCurrent: a plan at the judge's limits renders to more
// than 4 MB; its own PLAN.json must still be recognised, or every later step update would
// leave the copy stale as a "foreign" file.
func TestWritePlanCopyKeepsALargeCopyCurrent(t *testing.T) {
	s := core.Session{ID: "terminal:local:main"}
	p := core.Plan{ID: "p1", Version: 1, Status: core.PlanAccepted, Body: plan.Body{Title: "Big"}}
	crit := strings.Repeat("c", plan.MaxFieldLen)
	for i := 0; i < plan.MaxSteps; i++ {
		st := plan.Step{ID: fmt.Sprint(i + 1), Text: fmt.Sprint("step ", i), Status: plan.StepPending}
		for j := 0; j < 50; j++ {
			st.AcceptanceCriteria = append(st.AcceptanceCriteria, fmt.Sprint(j, crit))
		}
		p.Body.Steps = append(p.Body.Steps, st)
	}
	js, err := engine.RenderPlanJSON(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) <= 4<<20 {
		t.Fatalf("PLAN.json is only %d bytes", len(js))
	}
	dir := t.TempDir()
	for i, md := range []string{"# first\n", "# second\n"} {
		if err := engine.WritePlanCopy(dir, []byte(md), js); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "PLAN.md")); string(md) != "# second\n" {
		t.Errorf("PLAN.md = %q, want the second copy", md)
	}
}
