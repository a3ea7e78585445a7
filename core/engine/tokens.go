package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Model tokens (docs/design.md §10): each call's usage is added to the job's pending
// count (t.tokens) and goes into the next commit of the session's row that the job makes
// (commit calls withTokens), which is the commit of the turn's step that stores the
// call's answer: the session's counts (all, the day's, the plan work's) ride on its row,
// the plan version's are added in place (Change.PlanTokens). A job that stops before such
// a commit loses the count of its last call with the answer.

// tokenDay is the day a session's daily count is kept for: the engine's clock in UTC.
func (e *Engine) tokenDay() string { return e.d.Now().UTC().Format("2006-01-02") }

// counted notes one answered model call's usage: pending for the next commit, on the
// turn's total for its log line, in /metrics and in the debug log.
func (t *jobRun) counted(tr *turn, phase core.Phase, u core.Usage) {
	n := u.Tokens()
	t.tokens = t.tokens.Add(n)
	tr.tokens = tr.tokens.Add(n)
	kind := tokenPhase(phase)
	t.e.obs.obs.ModelTokens(kind, u.Prompt, u.Cached, u.Completion)
	t.e.d.Log.Debug("model call tokens", "session", t.sess.ID, "phase", kind, "reported", n.Unreported == 0,
		"prompt_tokens", u.Prompt, "cached_tokens", u.Cached, "completion_tokens", u.Completion)
}

// tokenPhase is the metrics label of a call made in phase: planning, executing or chat.
func tokenPhase(phase core.Phase) string {
	switch phase {
	case core.PhasePlanning, core.PhaseAwaitingApproval:
		return "planning"
	case core.PhaseExecuting:
		return "executing"
	}
	return "chat"
}

// logTurnTokens logs the turn's total at info, once it made a model call.
func (t *jobRun) logTurnTokens(tr *turn) {
	if tr == nil || tr.tokens.Calls == 0 {
		return
	}
	n := tr.tokens
	t.e.d.Log.Info("turn tokens", "session", t.sess.ID, "calls", n.Calls, "unreported_calls", n.Unreported,
		"prompt_tokens", n.Prompt, "cached_tokens", n.Cached, "completion_tokens", n.Completion)
}

// withTokens adds the job's pending count to ch, a change of the session's row read as
// t.sess: to the session's counts, and to the plan version the calls worked on. Calls
// while planning wait on the session (Tokens.Planning) until a version is proposed, which
// takes them over; calls while a version waits or is carried out are that version's.
func (t *jobRun) withTokens(ch core.Change) core.Change {
	add := t.tokens
	if add.IsZero() && (ch.Session.Phase != core.PhaseOff || ch.Session.Tokens.Planning.IsZero()) {
		return ch
	}
	next := *ch.Session
	next.Tokens = next.Tokens.Add(t.e.tokenDay(), add)
	cur := t.sess
	switch {
	case next.PlanID != "" && next.PlanID != cur.PlanID && slices.ContainsFunc(ch.Plans, func(p core.Plan) bool { return p.ID == next.PlanID }):
		ch.PlanTokens = &core.PlanTokens{PlanID: next.PlanID, Add: next.Tokens.Planning.Add(add)}
		next.Tokens.Planning = plan.Tokens{}
	case cur.Phase == core.PhasePlanning:
		next.Tokens.Planning = next.Tokens.Planning.Add(add)
	case cur.PlanID != "" && (cur.Phase == core.PhaseExecuting || cur.Phase == core.PhaseAwaitingApproval):
		ch.PlanTokens = &core.PlanTokens{PlanID: cur.PlanID, Add: add}
	}
	if next.Phase == core.PhaseOff {
		next.Tokens.Planning = plan.Tokens{} // the plan work ended without a version to hold them
	}
	ch.Session = &next
	return ch
}

// overBudget reports the token budget the session or its plan work has spent, counting
// the job's calls not committed yet: agent.max_tokens_per_session_day for the session's
// calls today, plan_mode.max_tokens_per_plan for the version being carried out (or
// waiting) and for the planning of the next one. It is asked before each model call.
func (t *jobRun) overBudget(ctx context.Context) (halt, bool) {
	c := t.e.cfg
	if limit := c.MaxTokensPerSessionDay; limit > 0 {
		if used := t.sess.Tokens.On(t.e.tokenDay()).Add(t.tokens).Total(); used >= limit {
			return halt{plan.StopDailyTokens, fmt.Sprintf("Stopped: this conversation used %s tokens today (UTC), its daily budget is %s (agent.max_tokens_per_session_day). It can go on after midnight UTC with a message, or sooner once an operator raises the budget.",
				plan.TokenCount(used), plan.TokenCount(limit))}, true
		}
	}
	limit := c.MaxTokensPerPlan
	if limit <= 0 || !c.PlanMode {
		return halt{}, false
	}
	switch t.sess.Phase {
	case core.PhasePlanning:
		if used := t.sess.Tokens.Planning.Add(t.tokens).Total(); used >= limit {
			return halt{plan.StopTokenBudget, fmt.Sprintf("Stopped: planning used %s tokens without proposing a version; a plan's budget is %s (plan_mode.max_tokens_per_plan). /plan off to end it, or an operator raises the budget.",
				plan.TokenCount(used), plan.TokenCount(limit))}, true
		}
	case core.PhaseExecuting, core.PhaseAwaitingApproval:
		p, err := t.currentPlan(ctx)
		if err != nil || p == nil {
			return halt{}, false // the gate refuses what a plan that cannot be read would allow
		}
		t.loaded, t.loadedAt = p, t.sess.Version // read once for the pinned plan as well
		if used := p.Tokens.Add(t.tokens).Total(); used >= limit {
			return halt{plan.StopTokenBudget, fmt.Sprintf("Stopped: plan v%d used %s tokens, its budget is %s (plan_mode.max_tokens_per_plan). Going on needs a new version: /plan revise <feedback>, or an operator raises the budget.",
				p.Version, plan.TokenCount(used), plan.TokenCount(limit))}, true
		}
	}
	return halt{}, false
}

// notRun answers calls without running them (why: "the token budget is spent"), so the
// transcript keeps every call paired with a result.
func (tr *turn) notRun(calls []core.ToolCall, why string, now time.Time) {
	for _, call := range calls {
		tr.add(core.ChatMessage{Role: core.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: "not run: " + why, At: now})
	}
}

// withStoredTokens is p with the token counts the store holds now: an outcome's plan was
// read before the commit that added the turn's calls to it.
func (t *jobRun) withStoredTokens(ctx context.Context, p core.Plan) core.Plan {
	stored, err := t.e.d.Store.Plan(context.WithoutCancel(ctx), p.ID)
	if err != nil {
		t.e.d.Log.Warn("reading the plan's token counts", "session", t.sess.ID, "plan", p.ID, "err", err)
		return p
	}
	p.Tokens = stored.Tokens
	return p
}
