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
