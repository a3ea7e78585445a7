package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// At most once for mutating tool calls: a call that passed the gate is recorded as
// started (durably) before it runs and as finished after. A process killed while the call
// ran leaves a started run behind; Resume reports it ("the run of X was interrupted by a
// restart; its effects are unknown") to the agent and the chat, and never runs it again.

// ToolRunInterrupted marks a run whose process died while it ran: its effects are unknown.
const ToolRunInterrupted core.ToolRunOutcome = "interrupted"

// interruptedText is what the agent and the chat are told about such a run.
func interruptedText(r core.ToolRun) string {
	return fmt.Sprintf("The run of %s was interrupted by a restart; its effects are unknown.", r.Detail)
}

// runMutating runs a mutating call that passed the gate: it re-reads the session from
// the store (another process may have decided meanwhile), records the run, calls the
// tool and records how it ended, in the ledger and as a tool_ran audit row.
func (t *jobRun) runMutating(ctx context.Context, gi gateInput, call core.ToolCall) toolResult {
	if res, ok := t.recheck(ctx, call); !ok {
		return res
	}
	// The workspace before the call: a budget already spent or a change the agent did
	// not make stops the turn here (budget.go).
	w, res, ok := t.watchBefore(ctx, call)
	if !ok {
		return res
	}
	run := core.ToolRun{SessionID: t.sess.ID, Tool: call.Name, Detail: describeCall(call.Name, call.Args), StartedAt: t.e.d.Now()}
	{
		nonce, err := machine.NewID(t.e.d.Random, 5)
		if err == nil {
			run.CallID = call.ID + "#" + nonce
			err = t.e.d.Store.StartToolRun(ctx, run)
		}
		if err != nil {
			t.e.d.Log.Error("recording a tool run", "session", t.sess.ID, "tool", call.Name, "err", err)
			return toolError("%s was not run: plangate could not record it (%v)", call.Name, err)
		}
	}
	start := t.e.d.Now()
	out, err := t.e.d.Tools.Call(ctx, t.e.workspace(t.sess), call.Name, call.Args)
	out, err, stop := t.screenOutput(call, out, err) // before the audit row and the result keep them
	run.Outcome, run.FinishedAt = core.ToolRunOK, t.e.d.Now()
	if err != nil {
		run.Outcome = core.ToolRunFailed
	}
	t.done = append(t.done, ranText(call, err))
	aerr := t.ran(ctx, gi, out, err, run.FinishedAt.Sub(start))
	t.serverDown(err)
	if ferr := t.e.d.Store.FinishToolRun(context.WithoutCancel(ctx), run); ferr != nil {
		t.e.d.Log.Warn("recording the end of a tool run", "session", t.sess.ID, "tool", call.Name, "err", ferr)
	}
	res = callResult(call, out, err, aerr)
	res.stop = cmp.Or(refusedSecret(err), stop, t.watchAfter(ctx, w))
	return res
}

// ranText says what a call did, for a conflict report: "wrote NOTES.md".
func ranText(call core.ToolCall, err error) string {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(call.Args, &a)
	what := describeCall(call.Name, call.Args)
	switch {
	case call.Name == "write_file" && a.Path != "":
		what = "wrote " + machine.OneLine(a.Path)
	case call.Name == "edit_file" && a.Path != "":
		what = "edited " + machine.OneLine(a.Path)
	case call.Name == "run_command":
		what = "ran " + strings.TrimPrefix(what, "run_command ")
	}
	if err != nil {
		what += " (it failed)"
	}
	return what
}

// recheck re-reads the session's phase and plan from the store before a mutating call:
// when another process turned the plan off or sent it back, the call is refused and the
// turn stops, saying so.
func (t *jobRun) recheck(ctx context.Context, call core.ToolCall) (toolResult, bool) {
	if !t.e.cfg.PlanMode {
		return toolResult{}, true
	}
	s, err := t.e.d.Store.Session(ctx, t.sess.ID)
	if err != nil {
		return toolError("%s was not run: the session could not be read again (%v)", call.Name, err), false
	}
	var p *core.Plan
	if s.Phase == core.PhaseExecuting && s.PlanID == t.sess.PlanID {
		stored, err := t.e.d.Store.Plan(ctx, s.PlanID)
		if err != nil {
			return toolError("%s was not run: the plan could not be read again (%v)", call.Name, err), false
		}
		p = &stored
	}
	why := changedWhy(t.sess, s, p)
	if why == "" {
		t.checked = p
		return toolResult{}, true
	}
	t.told = true
	return toolResult{content: "error: " + call.Name + " was not run: " + why, isError: true,
		stop: halt{text: "Stopped: " + t.changedElsewhere(why) + "; " + describeCall(call.Name, call.Args) + " was not run."}}, false
}

// changedWhy says why a mutating call of a turn that began on session cur may not run now
// that the store holds s (and p, its plan, when s still executes cur's plan); "" when it
// may.
func changedWhy(cur, s core.Session, p *core.Plan) string {
	switch {
	case s.Phase != core.PhaseExecuting && s.Phase != core.PhaseOff:
		return fmt.Sprintf("the plan was sent back elsewhere (phase: %s)", s.Phase)
	case s.Phase != core.PhaseExecuting:
		return fmt.Sprintf("the plan was turned off elsewhere (phase: %s)", s.Phase)
	case s.PlanID != cur.PlanID:
		return "another plan was accepted elsewhere"
	case p != nil && p.Status != core.PlanAccepted:
		return fmt.Sprintf("plan v%d is %s now", p.Version, p.Status)
	}
	return ""
}

// changedElsewhere is the truthful report of a change made elsewhere after this job's
// mutating calls: "wrote NOTES.md, then the plan was turned off elsewhere".
func (t *jobRun) changedElsewhere(why string) string {
	if len(t.done) == 0 {
		return machine.UpperFirst(why)
	}
	return machine.UpperFirst(strings.Join(t.done, ", ")) + ", then " + why
}

// conflictNotice is what a person is told when a commit lost to a change made elsewhere:
// "nothing was changed" only when that is true.
func (t *jobRun) conflictNotice(ctx context.Context) {
	if t.told {
		return
	}
	if len(t.done) == 0 {
		t.notice(ctx, "This conversation changed at the same moment elsewhere; nothing was changed. Please try again.")
		return
	}
	why := "the conversation changed elsewhere"
	if s, err := t.e.d.Store.Session(ctx, t.sess.ID); err == nil && s.Phase == core.PhaseOff {
		why = "the plan was turned off elsewhere"
	}
	t.notice(ctx, "%s; the rest of this turn was not recorded.", t.changedElsewhere(why))
}
