package tools

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A plan's verification commands (core.Checker) are run the way run_command runs the
// agent's: the same program rules, sandbox, limits, timeout and network setting, and the
// same put-back of the plan's copy and .git afterwards. They are plangate's runs, so the
// plan's scope does not gate them; the approver saw each one on the plan. The engine
// stops a plan whose checks changed a path its scope forbids.

var _ core.Checker = (*Toolbox)(nil)

// CheckArgv says why argv could not run here as a command check: run_command is off or
// has no sandbox, or the program is not allowed or not found.
func (t *Toolbox) CheckArgv(argv []string) error {
	if err := t.runRefusal(); err != nil {
		return err
	}
	_, _, err := t.program(argv)
	return err
}

// RunCheck runs one command check in the workspace ws. A check that cannot run or does
// not exit by itself (refused, timed out, over a limit) is a run with exit code -1 and
// Error saying why; only a cancelled context is an error.
func (t *Toolbox) RunCheck(ctx context.Context, ws core.Workspace, argv []string) (plan.CheckRun, error) {
	run := plan.CheckRun{Argv: slices.Clone(argv), ExitCode: -1}
	if err := t.CheckArgv(argv); err != nil {
		run.Error = "not run: " + err.Error()
		return run, nil
	}
	exe, path, err := t.program(argv)
	if err != nil {
		run.Error = "not run: " + err.Error()
		return run, nil
	}
	if err := t.EnsureWorkspace(ws); err != nil {
		return run, err
	}
	home, err := filepath.Abs(ws.Dir)
	if err != nil {
		return run, fmt.Errorf("resolving the workspace directory: %w", err)
	}
	r, err := t.runSandboxed(ctx, home, exe, path, argv, t.cfg.CommandTimeout)
	if err != nil {
		return run, err
	}
	out, runErr, restored := r.out, r.err, r.restored
	var startErr *startError
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return run, fmt.Errorf("running %s: %w", displayArgv(argv), ctx.Err())
	case errors.As(runErr, &startErr):
		run.Error = "did not start: " + unwrapExec(startErr.err).Error()
	case errors.Is(runErr, errProcessLimit):
		run.Error = fmt.Sprintf("stopped: more than %d processes at once (tools.run_command.limits.processes)", t.cfg.Limits.Processes)
	case errors.Is(r.cause, errOutputLimit):
		run.Error = fmt.Sprintf("stopped: more than %s of output (tools.run_command.limits.output)", formatBytes(t.cfg.Limits.Output))
	case r.timedOut:
		run.Error = fmt.Sprintf("timed out after %s", t.cfg.CommandTimeout)
	case runErr == nil || errors.Is(runErr, exec.ErrWaitDelay):
		run.ExitCode = 0
	case errors.As(runErr, &exitErr) && exitErr.ExitCode() >= 0:
		run.ExitCode = exitErr.ExitCode()
	case errors.As(runErr, &exitErr):
		run.Error = fmt.Sprintf("terminated: %v", exitErr.ProcessState)
	default:
		return run, fmt.Errorf("running %s: %w", displayArgv(argv), runErr)
	}
	text := out.String()
	if restored != "" {
		text += restored + "\n"
	}
	run.Tail = plan.Tail(text)
	return run, nil
}
