package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The report of a version that completed or stopped (docs/design.md §13): made from what
// is stored — the per-call changes budget.go recorded on Run.Changed, the tool_ran audit
// rows, the verification and the stop on the version — and one fingerprint of the
// workspace at the end; stored on the version (Run.Report), written beside the plan file
// (plan-…-vN-report.md) and posted with that file attached: after the completion's own
// message, or in the stop's commit, before its notice (which says what a person can do).
// It costs a fingerprint and a read of the session's audit rows, once per completion or
// stop.

// postReport makes the report of plan p, which completed, stores it and posts it. A
// failure is logged: the completion it reports on is already recorded.
func (t *jobRun) postReport(ctx context.Context, p core.Plan) {
	ctx = context.WithoutCancel(ctx)
	p, reply, ok := t.reportOn(ctx, p)
	if !ok {
		return
	}
	if err := t.commitSaying(ctx, core.Change{SessionID: t.sess.ID, Plans: []core.Plan{p}}, reply); err != nil {
		t.e.d.Log.Error("storing the plan's report", "session", t.sess.ID, "plan", p.ID, "err", err)
		return
	}
	if t.e.cfg.WorkspaceCopy && t.e.cfg.PlanMode {
		t.e.copyPlan(t.sess, p) // PLAN.json's report
	}
}

// reportOn makes the report of plan p and writes its file beside the plan file; it
// returns p with the report on its run and the reply that posts it, for the caller to
// commit. ok is false when no report could be made (logged).
func (t *jobRun) reportOn(ctx context.Context, p core.Plan) (core.Plan, core.Reply, bool) {
	r, err := t.makeReport(ctx, p)
	if err != nil {
		t.e.d.Log.Error("making the plan's report", "session", t.sess.ID, "plan", p.ID, "err", err)
		return p, core.Reply{}, false
	}
	p.Run.Report = &r
	label := fmt.Sprintf("plan v%d", p.Version)
	if r.Outcome != "completed" {
		label += ", stopped (" + strings.ReplaceAll(r.Outcome, "_", " ") + ")"
	}
	reply := core.Reply{Kind: core.ReplyReport, Ref: p.ApprovalID, Text: fmt.Sprintf("Report of %s: %s.", label, r.Summary())}
	if ch := p.Run.Changed; ch != nil && len(ch.Paths) > 0 && p.Run.Undone == nil && p.ApprovalID != "" {
		// Where the platform has buttons; /plan undo does the same everywhere.
		reply.Buttons = []core.Button{{Label: "Undo", Action: core.Action{Kind: core.ActionUndo, ApprovalID: p.ApprovalID}}}
	}
	if p.File != "" {
		name := plan.ReportFileName(machine.FileBase(p.File))
		path, err := WritePlanFile(t.e.files.dir, t.sess.Address.Dir(), name, r.Markdown(p.Version, p.Body.Title))
		if err != nil {
			t.e.d.Log.Error("writing the plan's report", "session", t.sess.ID, "plan", p.ID, "err", err)
		} else {
			reply.Attachments = []core.File{{Name: name, MIME: "text/markdown", Path: path}}
		}
	}
	return p, reply, true
}

// makeReport builds the report of p from the store and the workspace now.
func (t *jobRun) makeReport(ctx context.Context, p core.Plan) (plan.Report, error) {
	tokens := p.Tokens
	r := plan.Report{Outcome: "completed", At: p.UpdatedAt, Verification: p.Run.Verification,
		Files: []plan.FileLines{}, NotDone: notDone(p), Outside: []string{}, Tokens: &tokens}
	if st := p.Run.Stop; st != nil && p.Status != core.PlanCompleted {
		r.Outcome, r.At = string(st.Kind), st.At
	}
	events, err := t.e.d.Store.Events(ctx, t.sess.ID)
	if err != nil {
		return r, fmt.Errorf("reading the audit rows: %w", err)
	}
	ch := p.Run.Changed
	if ch == nil {
		ch = &plan.Changed{}
	}
	r.Steps = reportSteps(p.Body.Steps, ch.Calls, commandsOf(events, p.ID))
	f, ok := t.e.d.Tools.(core.Fingerprinter)
	base := p.Run.Base()
	if !ok || base == nil {
		return r, nil
	}
	after, err := f.Fingerprint(ctx, t.e.workspace(t.sess))
	if err != nil {
		return r, fmt.Errorf("fingerprinting the workspace: %w", err)
	}
	last := p.Run.Last()
	if err := t.e.loadTree(ctx, base); err != nil {
		return r, err
	}
	if err := t.e.loadTree(ctx, last); err != nil {
		return r, err
	}
	r.Measured, r.Before, r.After = true, plan.MarkOf(base), plan.MarkOf(after)
	if len(ch.Paths) > 0 {
		if r.Files, err = f.LineCounts(ctx, base, after, ch.Paths); err != nil {
			return r, fmt.Errorf("counting changed lines: %w", err)
		}
	}
	// Changes after the agent's last call are not the agent's either.
	since, err := plan.CompareTrees(last, after)
	if err != nil {
		return r, fmt.Errorf("comparing fingerprints: %w", err)
	}
	r.Outside = addNew(slices.Clone(ch.Outside), since.Paths())
	if r.Outside == nil {
		r.Outside = []string{}
	}
	return r, nil
}

// commandsOf are the run_command calls of plan planID in the audit rows, in order.
func commandsOf(events []core.Event, planID string) []plan.ReportCommand {
	var out []plan.ReportCommand
	for _, e := range events {
		if e.Kind != EventToolRan || e.PlanID != planID {
			continue
		}
		var a ToolAudit
		if json.Unmarshal([]byte(e.Detail), &a) != nil || a.Tool != "run_command" {
			continue
		}
		c := plan.ReportCommand{Step: a.Step, Command: strings.TrimPrefix(a.Call, "run_command "), ExitCode: a.ExitCode, Why: a.Why}
		if c.ExitCode == nil && c.Why == "" {
			c.Why = "not recorded"
		}
		out = append(out, c)
	}
	return out
}

// reportSteps groups the calls' changes and the commands by the step in progress when
// they ran: every step of the plan in order, then, when anything ran while no step was in
// progress, a group for that. A file a step's calls changed twice is one line, summed.
func reportSteps(steps []plan.Step, calls []plan.CallChange, cmds []plan.ReportCommand) []plan.ReportStep {
	out := make([]plan.ReportStep, 0, len(steps)+1)
	at := map[string]int{}
	for _, s := range steps {
		at[s.ID] = len(out)
		out = append(out, plan.ReportStep{Step: s.ID, Text: s.Text, Status: s.Status, Files: []plan.FileLines{}, Commands: []plan.ReportCommand{}})
	}
	group := func(id string) *plan.ReportStep {
		i, ok := at[id]
		if !ok {
			id, i = "", len(out)
			if j, seen := at[""]; seen {
				i = j
			} else {
				at[""] = i
				out = append(out, plan.ReportStep{Files: []plan.FileLines{}, Commands: []plan.ReportCommand{}})
			}
		}
		return &out[i]
	}
	for _, c := range calls {
		g := group(c.Step)
		for _, f := range c.Files {
			g.Files = mergeLines(g.Files, f)
		}
	}
	for _, c := range cmds {
		g := group(c.Step)
		g.Commands = append(g.Commands, c)
	}
	return out
}

// mergeLines adds f to files: a path already there gets its counts added, and its kind
// says how it changed over both (added then changed is added; added then removed stays
// removed).
func mergeLines(files []plan.FileLines, f plan.FileLines) []plan.FileLines {
	for i := range files {
		g := &files[i]
		if g.Path != f.Path {
			continue
		}
		g.Added += f.Added
		g.Removed += f.Removed
		g.Counted = g.Counted && f.Counted
		if g.Kind != plan.FileAdded || f.Kind == plan.FileRemoved {
			g.Kind = f.Kind
		}
		return files
	}
	return append(files, f)
}

// notDone are p's steps that did not happen: cancelled ones with their reason, and, for
// a version that did not complete, the ones still open.
func notDone(p core.Plan) []plan.NotDone {
	out := []plan.NotDone{}
	for _, s := range p.Body.Steps {
		switch {
		case s.Status == plan.StepCancelled:
			out = append(out, plan.NotDone{Step: s.ID, Text: s.Text, Status: s.Status, Reason: cmp.Or(s.CancelReason, "cancelled without a reason")})
		case p.Status != core.PlanCompleted && s.Status != plan.StepCompleted:
			why := "the execution stopped before it"
			if st := p.Run.Stop; st != nil {
				why = "the execution stopped (" + string(st.Kind) + ") before it was done"
			}
			out = append(out, plan.NotDone{Step: s.ID, Text: s.Text, Status: s.Status, Reason: why})
		}
	}
	return out
}
