package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The executor's copy of the plan (docs/design.md §13): an accepted version is written into
// the session's workspace as PLAN.md (the plan file's markdown, without its "Changes from
// vN" section) and PLAN.json, and rewritten whenever that version changes, so the agent and
// anything it runs can read the contract it works under. The workspace tools refuse to
// change either file.

// PlanCopyFormat is the version of PLAN.json's shape: within a format fields are only added.
const PlanCopyFormat = 1

// PlanDocument is PLAN.json. Every list is present (empty rather than missing); spec and
// decision are omitted when the plan has none.
type PlanDocument struct {
	Format  int             `json:"format"` // PlanCopyFormat
	PlanID  string          `json:"plan_id"`
	Session string          `json:"session"`
	Version int             `json:"version"` // the plan version (v1, v2, ...)
	Status  core.PlanStatus `json:"status"`
	Title   string          `json:"title"`
	Summary string          `json:"summary"`
	Steps   []PlanDocStep   `json:"steps"`
	// Risk is the plan's risk level ("" when it states none).
	Risk            plan.RiskLevel `json:"risk"`
	NonGoals        []string       `json:"non_goals"`
	ExpectedOutcome string         `json:"expected_outcome"`
	Assumptions     []string       `json:"assumptions"`
	Risks           []plan.Risk    `json:"risks"`
	// Verification is the plan's: a string is a check in words, an object a command
	// plangate runs ({"argv": [...], "name": "..."}).
	Verification []plan.Check `json:"verification"`
	// VerificationRuns is what plangate recorded of running those commands (omitted
	// before it first ran them).
	VerificationRuns *plan.Verification `json:"verification_runs,omitempty"`
	// Stop is why plangate stopped carrying the version out, while it stays stopped
	// ({"kind", "message", "at"}; omitted when it is not stopped).
	Stop *plan.Stop `json:"stop,omitempty"`
	// Report is what the execution did, made when it last completed or stopped (omitted
	// before that).
	Report *plan.Report `json:"report,omitempty"`
	// Undo is the /plan undo that put the files the execution changed back as they were
	// at acceptance ({"by", "by_name", "at", "files": [{"path", "action"}]}; omitted when
	// the version was not undone).
	Undo *plan.Undone `json:"undo,omitempty"`
	// Tokens are the version's model tokens so far, its planning and execution
	// ({"prompt", "cached", "completion", "calls", "unreported"}: prompt includes cached;
	// unreported counts the calls whose usage the endpoint did not report).
	Tokens     plan.Tokens       `json:"tokens"`
	Scope      PlanDocScope      `json:"scope"`
	References []string          `json:"references"`
	Spec       *plan.ProductSpec `json:"spec,omitempty"`
	Approvals  []plan.Approval   `json:"approvals"`
	Decision   *plan.Decision    `json:"decision,omitempty"`
	Requesters []core.Requester  `json:"requesters,omitempty"`
	EditedBy   string            `json:"edited_by,omitempty"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

// PlanDocStep is one step of PLAN.json.
type PlanDocStep struct {
	ID                 string          `json:"id"`
	Text               string          `json:"text"`
	Status             plan.StepStatus `json:"status"`
	AcceptanceCriteria []string        `json:"acceptance_criteria"`
	VerifiedCriteria   []string        `json:"verified_criteria"`
	CancelReason       string          `json:"cancel_reason,omitempty"`
}

// PlanDocScope is the scope of PLAN.json.
type PlanDocScope struct {
	AllowedPaths   []string `json:"allowed_paths"`
	ForbiddenPaths []string `json:"forbidden_paths"`
	AllowedTools   []string `json:"allowed_tools"`
	// The budget; omitted when there is none.
	MaxFilesChanged int `json:"max_files_changed,omitempty"`
	MaxLinesChanged int `json:"max_lines_changed,omitempty"`
	// OperatorLimits is plan_mode.boundary as the version inherited it; omitted when
	// there was none.
	OperatorLimits *plan.Boundary `json:"operator_limits,omitempty"`
}

// NewPlanDocument builds PLAN.json's content for plan p of session s.
func NewPlanDocument(s core.Session, p core.Plan) PlanDocument {
	b := p.Body
	d := PlanDocument{Format: PlanCopyFormat, PlanID: p.ID, Session: s.ID, Version: p.Version, Status: p.Status,
		Title: b.Title, Summary: b.Summary, Risk: b.Risk, NonGoals: list(b.NonGoals), ExpectedOutcome: b.ExpectedOutcome,
		Assumptions: list(b.Assumptions), Risks: list(b.Risks),
		Verification: list(b.Verification), References: list(b.References), Spec: b.Spec,
		Scope: PlanDocScope{list(b.Scope.AllowedPaths), list(b.Scope.ForbiddenPaths), list(b.Scope.AllowedTools),
			b.Scope.MaxFilesChanged, b.Scope.MaxLinesChanged, b.Scope.Operator},
		Approvals: list(p.Approvals), Decision: p.Decision, Requesters: p.Requesters, EditedBy: p.EditedBy,
		VerificationRuns: p.Run.Verification, Stop: p.Run.Stop, Report: p.Run.Report, Undo: p.Run.Undone, Tokens: p.Tokens,
		UpdatedAt: p.UpdatedAt, Steps: make([]PlanDocStep, 0, len(b.Steps))}
	for _, st := range b.Steps {
		d.Steps = append(d.Steps, PlanDocStep{ID: st.ID, Text: st.Text, Status: st.Status,
			AcceptanceCriteria: list(st.AcceptanceCriteria), VerifiedCriteria: list(st.VerifiedCriteria), CancelReason: st.CancelReason})
	}
	return d
}

func list[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}

// RenderPlanJSON is PLAN.json for plan p of session s: indented, with <, > and & as they
// are (the file is data for programs, not HTML).
func RenderPlanJSON(s core.Session, p core.Plan) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewPlanDocument(s, p)); err != nil {
		return nil, fmt.Errorf("encoding PLAN.json: %w", err)
	}
	return b.Bytes(), nil
}

// ErrForeignPlanCopy: the workspace has a PLAN.md or PLAN.json plangate did not write.
var ErrForeignPlanCopy = errors.New("the workspace has its own PLAN.md or PLAN.json, which plangate leaves alone (rename it, or set plan_mode.workspace_copy: false)")

// WritePlanCopy writes the copy's files into the workspace dir through an os.Root, each to
// a temporary name renamed over the old one: a reader sees the old file or the new one, and
// a link planted at the name is replaced rather than written through. A PLAN.md or
// PLAN.json plangate did not write is left alone (ErrForeignPlanCopy). PLAN.json goes
// first, so it always marks a copy whose PLAN.md is plangate's.
func WritePlanCopy(dir string, md, js []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if !ownCopy(root) {
		for _, name := range core.PlanCopyNames {
			if _, err := root.Lstat(name); err == nil {
				return fmt.Errorf("%w: %s", ErrForeignPlanCopy, name)
			}
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{core.PlanCopyJSON, js}, {core.PlanCopyMarkdown, md}} {
		tmp := "." + f.name + ".tmp-" + rand.Text()
		err := writeTemp(root, tmp, f.data)
		if err == nil {
			err = root.Rename(tmp, f.name)
		}
		if err != nil {
			_ = root.Remove(tmp)
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return nil
}

// ownCopy reports whether the workspace's PLAN.json is one plangate wrote: a regular
// file that reads as a PlanDocument with a format and a plan id.
func ownCopy(root *os.Root) bool {
	fi, err := root.Lstat(core.PlanCopyJSON)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > core.MaxPlanCopyBytes {
		return false
	}
	data, err := root.ReadFile(core.PlanCopyJSON)
	if err != nil {
		return false
	}
	var d PlanDocument
	return json.Unmarshal(data, &d) == nil && d.Format >= 1 && d.PlanID != ""
}

// WorkspaceEnsurer is an optional part of the Toolbox: it creates a session's workspace as
// the tools would on first use (seeding it), so the copy written before any tool ran does
// not leave an unseeded workspace behind.
type WorkspaceEnsurer interface {
	EnsureWorkspace(ws core.Workspace) error
}

// EnsureWorkspace asks the first toolbox that can create workspaces to do so.
func (ts toolboxes) EnsureWorkspace(ws core.Workspace) error {
	for _, b := range ts {
		if en, ok := b.(WorkspaceEnsurer); ok {
			return en.EnsureWorkspace(ws)
		}
	}
	return mkWorkspace(ws)
}

func mkWorkspace(ws core.Workspace) error {
	if err := os.MkdirAll(ws.Dir, 0o755); err != nil {
		return fmt.Errorf("creating the workspace: %w", err)
	}
	return nil
}

// copyPlan writes the workspace copy of p as session s now sees it; a failure is logged,
// and the next change of the plan writes it again.
func (e *Engine) copyPlan(s core.Session, p core.Plan) {
	ws := e.workspace(s)
	if ws.Dir == "" {
		return
	}
	ensure := mkWorkspace
	if en, ok := e.d.Tools.(WorkspaceEnsurer); ok {
		ensure = en.EnsureWorkspace
	}
	err := ensure(ws)
	var js []byte
	if err == nil {
		js, err = RenderPlanJSON(s, p)
	}
	if err == nil {
		err = WritePlanCopy(ws.Dir, e.planMarkdown(s, p), js)
	}
	switch {
	case errors.Is(err, ErrForeignPlanCopy):
		e.d.Log.Warn("not writing the workspace copy of the plan", "session", s.ID, "plan", p.ID, "err", err)
	case err != nil:
		e.d.Log.Error("writing the workspace copy of the plan", "session", s.ID, "plan", p.ID, "err", err)
	}
}

// planMarkdown is PLAN.md: the plan file as session s sees it, destructive tools marked alike.
func (e *Engine) planMarkdown(s core.Session, p core.Plan) []byte {
	return machine.RenderPlanMarkdownMarked(p, s.Phase, s.Address.Chat, e.files.marks.destructive(), e.cfg.Reach)
}
