package engine

import (
	"context"
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Verification run by plangate: an update_plan call that would finish an executing plan
// whose verification names commands runs them first, one after another in the command
// sandbox (Deps.Checks), and Apply decides on the runs (machine.Input.Checks). It costs
// the checks' own time, once per attempt to finish a plan; nothing else runs them.

// completesChecked reports whether call would finish the executing plan cur, which has
// command checks.
func (t *jobRun) completesChecked(cur *core.Plan, call core.ToolCall) bool {
	return cur != nil && t.sess.Phase == core.PhaseExecuting && cur.Status == core.PlanAccepted &&
		len(plan.Commands(cur.Body.Verification)) > 0 && machine.WouldComplete(*cur, call.Args)
}

// runChecksOwned runs the checks of the executing plan p and takes what they write in
// the workspace (a build output, a cache) as plangate's own: when the workspace was as the
// agent's last call left it, the tree after the checks is the one the next mutating call
// is compared with, so those files are neither a drift nor counted against the budget. A
// change made before the checks stays for the next call to find. A check is a command,
// and no command honours a forbidden path: a path the checks changed that the scope
// forbids (the operator's boundary included) is never taken as plangate's own, and the
// stop returned says which, for a person to look. It returns the plan as recorded then (p
// when nothing was). Two fingerprints per attempt to finish the plan.
func (t *jobRun) runChecksOwned(ctx context.Context, p *core.Plan) ([]plan.CheckRun, *core.Plan, halt, error) {
	f, ok := t.e.d.Tools.(core.Fingerprinter)
	if !ok || p.Run.Base() == nil {
		runs, err := t.runChecks(ctx, *p)
		return runs, p, halt{}, err
	}
	last := p.Run.Last()
	ws := t.e.workspace(t.sess)
	before, beforeErr := f.Fingerprint(ctx, ws)
	runs, err := t.runChecks(ctx, *p)
	if err != nil || beforeErr != nil || before == nil {
		return runs, p, halt{}, err
	}
	after, err := f.Fingerprint(context.WithoutCancel(ctx), ws)
	if err != nil || after == nil || after.Hash == before.Hash {
		return runs, p, halt{}, nil
	}
	if stop := t.checksForbidden(p, before, after); stop.kind != "" {
		return runs, p, stop, nil
	}
	if before.Hash != last.Hash {
		return runs, p, halt{}, nil
	}
	ch := changedOf(p)
	ch.Last = after
	if saved := t.saveChanged(ctx, p, ch, true); saved != nil {
		return runs, saved, halt{}, nil
	}
	return runs, p, halt{}, nil
}

// checksForbidden is the stop for checks that changed, between before and after, a path
// p's scope forbids; the zero halt when they changed none.
func (t *jobRun) checksForbidden(p *core.Plan, before, after *plan.Tree) halt {
	if len(p.Body.Scope.ForbiddenPaths) == 0 {
		return halt{}
	}
	c, err := plan.CompareTrees(before, after)
	if err != nil {
		t.e.d.Log.Error("comparing fingerprints", "session", t.sess.ID, "err", err)
		return halt{}
	}
	for _, path := range c.Paths() {
		if f, ok := machine.ForbiddenBy(p.Body.Scope, path); ok {
			return halt{plan.StopForbiddenPath, fmt.Sprintf("Stopped: plan v%d's verification changed %s, which its scope forbids (%s); the plan stays open. "+
				"Check the change, then send a message to let me go on, or /plan revise <feedback>.", p.Version, path, f)}
		}
	}
	return halt{}
}

// runChecks runs every command check of p in its order; a check that cannot run here is
// a failed run that says why.
func (t *jobRun) runChecks(ctx context.Context, p core.Plan) ([]plan.CheckRun, error) {
	var runs []plan.CheckRun
	for _, c := range plan.Commands(p.Body.Verification) {
		var run plan.CheckRun
		if t.e.d.Checks == nil {
			run = plan.CheckRun{Argv: c.Argv, ExitCode: -1, Error: "not run: commands cannot run in this gateway (tools.run_command is off)"}
		} else {
			var err error
			if run, err = t.e.d.Checks.RunCheck(ctx, t.e.workspace(t.sess), c.Argv); err != nil {
				return nil, fmt.Errorf("running %s: %w", plan.DisplayArgv(c.Argv), err)
			}
		}
		run.Name = c.Name
		runs = append(runs, run)
	}
	return runs, nil
}
