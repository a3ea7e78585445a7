package machine

import (
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Verification run by plangate: a plan whose verification lists commands is completed
// only when plangate has run them all and each passed. The engine runs them (Input.Checks)
// when an update_plan call would finish the last step; Apply decides on the result.

// DefaultMaxVerifierRetries is retry_policy.max_verifier_retries when it is not set.
const DefaultMaxVerifierRetries = 2

// WouldComplete reports whether the update_plan call args would finish every step of the
// executing plan p, so the engine knows to run p's checks before Apply decides.
func WouldComplete(p core.Plan, args []byte) bool {
	u, err := plan.ParseUpdate(args)
	if err != nil {
		return false
	}
	steps, err := plan.ApplyUpdate(p.Body.Steps, u)
	if err != nil {
		return false
	}
	steps, changes := keepAccepted(p.Body.Steps, steps, u.Merge)
	return len(changes) == 0 && plan.AllDone(steps)
}

// CommandProblems are the reasons the plan's command checks cannot run here (the
// program is not one run_command may start, commands are off), worded for the model:
// a plan that can never pass its checks is refused when proposed.
func CommandProblems(b plan.Body, rules Rules) []string {
	var out []string
	for i, c := range b.Verification {
		if !c.IsCommand() || len(plan.ArgvProblems(c.Argv)) > 0 {
			continue
		}
		var err error
		if rules.CheckArgv == nil {
			err = fmt.Errorf("commands cannot run in this gateway (tools.run_command is off or unavailable); describe the check in words instead")
		} else {
			err = rules.CheckArgv(c.Argv)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("verification %d (%s) cannot run: %v", i+1, plan.DisplayArgv(c.Argv), err))
		}
	}
	return out
}

// verified decides on the checks the engine ran for an update that finishes the plan: it
// records them on p's run and reports whether they all passed. On a failure the tool
// reply says what failed, with the output's tail, and, after more failed attempts than
// retry_policy.max_verifier_retries, the turn stops (ToolReply.Stop).
func (x *transition) verified(p *core.Plan) bool {
	ran := x.in.Checks
	if ran == nil {
		x.refuse("plangate could not run the plan's verification commands; the plan stays open. Stop here and say so in your reply")
		return false
	}
	v := plan.Verification{Runs: ran}
	if prev := p.Run.Verification; prev != nil {
		v.Attempts, v.Failures = prev.Attempts, prev.Failures
	}
	if st := p.Run.Stop; st != nil && st.Kind == plan.StopVerificationFailed {
		// A person answered the stop: the attempts they let go on count afresh.
		v.Failures = 0
		p.Run.Stop = nil
	}
	v.Attempts++
	failed := v.Failed()
	v.Passed = len(failed) == 0
	if v.Passed {
		v.Failures = 0
	} else {
		v.Failures++
	}
	p.Run.Verification = &v
	if v.Passed {
		return true
	}
	max := x.in.Rules.MaxVerifierRetries
	var b strings.Builder
	fmt.Fprintf(&b, "error: plan v%d is not complete: plangate ran its verification and %d of %d checks failed.", p.Version, len(failed), len(v.Runs))
	for _, r := range failed {
		fmt.Fprintf(&b, "\n\n$ %s\n%s", plan.DisplayArgv(r.Argv), r.Outcome())
		if r.Tail != "" {
			b.WriteString("\n" + r.Tail)
		}
	}
	left := max + 1 - v.Failures
	if left > 0 {
		fmt.Fprintf(&b, "\n\nFix the cause, then call update_plan again to finish the plan (%d %s left before a person is asked).", left, Plural(left, "attempt", "attempts"))
		x.tool(false, "%s", b.String())
		x.o.Tool.Error = true
		return false
	}
	b.WriteString("\n\nThat was the last attempt; a person decides how to go on. Stop here.")
	x.tool(true, "%s", b.String())
	x.o.Tool.Error = true
	x.o.Tool.Stop = plan.StopVerificationFailed
	times := "once"
	if v.Failures > 1 {
		times = fmt.Sprintf("%d times in a row", v.Failures)
	}
	x.o.Tool.StopText = fmt.Sprintf("Stopped: plan v%d failed its verification %s (%s; retry_policy.max_verifier_retries is %d). Reply to let me try again, /plan revise <feedback> to change the plan, or /plan off to stop it.",
		p.Version, times, failedLabels(failed), max)
	return false
}

// failedLabels names the failed checks and how, for one line of the chat.
func failedLabels(runs []plan.CheckRun) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = r.Label() + ": " + r.Outcome()
	}
	return strings.Join(parts, "; ")
}

// checksLine is the card's line for a plan's command checks ("" when it has none):
// what plangate runs before it calls the plan done.
func checksLine(b plan.Body) string {
	cmds := plan.Commands(b.Verification)
	if len(cmds) == 0 {
		return ""
	}
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		parts[i] = plan.DisplayArgv(c.Argv)
		if c.Name != "" {
			parts[i] = c.Name + " (" + parts[i] + ")"
		}
	}
	return "Checks plangate runs before done: " + strings.Join(parts, " · ")
}

// verificationStatus is /plan status's line for the latest verification attempt ("" when
// none ran).
func verificationStatus(p core.Plan) string {
	v := p.Run.Verification
	if v == nil {
		if len(plan.Commands(p.Body.Verification)) > 0 && p.Status == core.PlanAccepted {
			return "verification: not run yet; plangate runs it when the last step is done"
		}
		return ""
	}
	line := "verification: " + strings.ToLower(plan.VerificationSummary(*v)[:1]) + plan.VerificationSummary(*v)[1:]
	if f := v.Failed(); len(f) > 0 {
		line += " (" + failedLabels(f) + ")"
	}
	return line
}
