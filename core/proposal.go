package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// exitPlanMode validates a proposal, stores it as a new plan version, writes its markdown
// file and posts it for a decision (or accepts it at once when auto-approve is on).
func (t *turnState) exitPlanMode(ctx context.Context, args json.RawMessage) toolResult {
	e := t.e
	if !e.cfg.PlanMode {
		return toolError("plan mode is disabled in this gateway")
	}
	trig := TrigPropose
	if t.sess.AutoApprove {
		trig = TrigAutoPropose
	}
	to, ok := e.machine.Next(t.sess.Phase, trig)
	if !ok {
		switch t.sess.Phase {
		case PhaseExecuting:
			return toolError("a plan is already accepted and being carried out; report progress with update_plan. Only the user can send it back (/plan revise)")
		default:
			return toolError("plan mode is off; call enter_plan_mode first, investigate, then propose a plan")
		}
	}
	body, err := ParseProposal(args)
	if err != nil {
		return toolError("%v", err)
	}
	if err := JudgePlan(body); err != nil {
		return toolError("the plan was not posted; fix these problems and call exit_plan_mode again:\n%v", err)
	}
	prev, havePrev, err := t.currentPlan(ctx)
	if err != nil {
		return toolError("could not load the current plan: %v", err)
	}
	hash := HashPlan(body)
	if havePrev && prev.Status == PlanPending && prev.Hash == hash {
		t.notice(ctx, "Plan v%d %q is unchanged and still waiting: /plan accept · /plan revise <feedback>", prev.Version, prev.Body.Title)
		return toolResult{content: fmt.Sprintf("This plan is identical to the pending plan v%d, which is still waiting for the user's decision. Stop here.", prev.Version), endTurn: true}
	}
	now := e.d.Now()
	plan := Plan{SessionID: t.sess.ID, Version: 1, Status: PlanPending, Body: body, Hash: hash, CreatedAt: now, UpdatedAt: now}
	if havePrev {
		plan.Version = prev.Version + 1
	}
	if plan.ID, err = e.newID(6); err != nil {
		return toolError("%v", err)
	}
	plan.ID = "p" + plan.ID
	if plan.ApprovalID, err = e.newID(10); err != nil {
		return toolError("%v", err)
	}
	next := t.sess
	next.Phase = to
	next.PlanID = plan.ID
	next.ApprovalID = plan.ApprovalID
	next.Question = nil
	ch := Change{}
	var superseded *Plan
	if havePrev && prev.Status == PlanPending {
		prev.Status = PlanSuperseded
		prev.UpdatedAt = now
		superseded = &prev
		ch.Plans = append(ch.Plans, prev)
		ch.Events = append(ch.Events, t.event(EventSuperseded, "agent", &prev, fmt.Sprintf("by v%d", plan.Version)))
	}
	ch.Events = append(ch.Events, t.event(EventProposed, "agent", &plan, body.Title))
	// Whatever was scheduled before (an older version, a question) is replaced.
	ch.CancelNudges = true
	if trig == TrigPropose {
		ch.Nudges = append(e.reminders(next, plan.ID, now), e.expiry(next, plan.ID, now)...)
	}
	if trig == TrigAutoPropose {
		plan.Status = PlanAccepted
		plan.Decision = &Decision{By: "auto", At: now, Channel: t.sess.Address.Channel, Outcome: "auto_accepted"}
		next.ApprovalID = ""
		next.Injections = append(next.Injections, approvedInjection(plan, "auto-approve is on"))
		ch.Events = append(ch.Events, t.event(EventAutoAccepted, "system", &plan, "auto-approve is on"))
	}
	if plan.File, err = e.writePlanFile(next, plan); err != nil {
		e.d.Log.Error("writing plan file", "session", t.sess.ID, "err", err)
		return toolError("the plan could not be saved (%v); try again", err)
	}
	ch.Plans = append(ch.Plans, plan)
	res := toolResult{content: fmt.Sprintf("Plan v%d posted for approval. Stop here and wait for [PLAN_DECISION].", plan.Version), endTurn: true}
	if trig == TrigAutoPropose {
		res.content = fmt.Sprintf("Plan v%d was auto-approved (auto-approve is on). Stop here; the decision arrives as [PLAN_DECISION].", plan.Version)
	}
	res.change = &stateChange{next: next, ch: ch, after: func(ctx context.Context) {
		e.noteProposal(t.sess.ID, plan.ID)
		if superseded != nil {
			e.refreshFile(ctx, t.sess, *superseded)
			e.announceDecision(ctx, t.sess, *superseded, fmt.Sprintf("superseded by v%d", plan.Version))
		}
		e.nudgesChanged(ctx, t.sess.ID)
		r := e.planReply(t.sess, plan)
		r.Text = proposalText(plan, superseded, prevIfRevised(prev, havePrev))
		if _, err := e.send(ctx, r); err != nil {
			t.notice(ctx, "The plan could not be delivered here (%s). It is saved as %s; /plan show sends it again.", oneLine(err.Error()), plan.File)
		}
	}}
	return res
}

// prevIfRevised returns the previous version when it is the one the new version answers.
func prevIfRevised(prev Plan, ok bool) *Plan {
	if !ok || prev.Status == PlanCompleted || prev.Status == PlanAborted || prev.Status == PlanAbandoned {
		return nil
	}
	return &prev
}

func proposalText(p Plan, superseded, previous *Plan) string {
	var b strings.Builder
	n := len(p.Body.Steps)
	fmt.Fprintf(&b, "Plan v%d — %s (%d %s)", p.Version, p.Body.Title, n, plural(n, "step", "steps"))
	if p.Body.Summary != "" {
		b.WriteString("\n" + oneLine(p.Body.Summary))
	}
	if previous != nil {
		if d := stepDiff(previous.Body.Steps, p.Body.Steps); d != "" {
			fmt.Fprintf(&b, "\nChanges from v%d: %s", previous.Version, d)
		}
	}
	if superseded != nil {
		fmt.Fprintf(&b, "\n(v%d is superseded.)", superseded.Version)
	}
	if p.Status == PlanAccepted {
		b.WriteString("\nAuto-approved: auto-approve is on for this conversation (/plan auto off to stop). Working on it.")
	} else {
		b.WriteString("\nDecide: /plan accept · /plan revise <feedback> · /plan auto")
	}
	return b.String()
}

// stepDiff summarizes added and removed steps by text.
func stepDiff(old, cur []Step) string {
	in := func(steps []Step, text string) bool {
		for _, s := range steps {
			if strings.EqualFold(strings.TrimSpace(s.Text), strings.TrimSpace(text)) {
				return true
			}
		}
		return false
	}
	var parts []string
	for _, s := range cur {
		if !in(old, s.Text) {
			parts = append(parts, "+ "+s.Text)
		}
	}
	for _, s := range old {
		if !in(cur, s.Text) {
			parts = append(parts, "− "+s.Text)
		}
	}
	if len(parts) == 0 && len(old) == len(cur) {
		return "same steps, details changed"
	}
	return strings.Join(parts, " · ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// updatePlan applies step progress to the accepted plan and completes it when every step
// is done.
func (t *turnState) updatePlan(ctx context.Context, args json.RawMessage) toolResult {
	e := t.e
	u, err := ParseUpdatePlan(args)
	if err != nil {
		return toolError("%v", err)
	}
	switch t.sess.Phase {
	case PhasePlanning:
		return toolResult{content: "Noted. While planning, steps are drafts: they become the plan when you call exit_plan_mode."}
	case PhaseAwaitingApproval:
		return toolError("the plan is waiting for the user's decision; wait for [PLAN_DECISION] before reporting progress")
	case PhaseOff:
		return toolError("there is no accepted plan to update (phase: off)")
	}
	p, ok, err := t.currentPlan(ctx)
	if err != nil || !ok {
		return toolError("no accepted plan is loaded")
	}
	steps, err := ApplyUpdate(p.Body.Steps, u)
	if err != nil {
		return toolError("%v", err)
	}
	if dropped := droppedOpenSteps(p.Body.Steps, steps); len(dropped) > 0 {
		return toolError("update_plan would drop unfinished steps of the accepted plan (%s); mark them cancelled instead, or use merge: true", strings.Join(dropped, "; "))
	}
	p.Body.Steps = steps
	p.UpdatedAt = e.d.Now()
	next := t.sess
	ch := Change{Plans: []Plan{p}}
	done, total := stepProgress(steps)
	complete := AllDone(steps)
	if complete {
		to, _ := e.machine.Next(t.sess.Phase, TrigComplete)
		p.Status = PlanCompleted
		ch.Plans = []Plan{p}
		next.Phase = to
		next.Question = nil
		next.Injections = append(next.Injections, Injection{Kind: InjectComplete,
			Text: fmt.Sprintf("[PLAN_COMPLETE]\nEvery step of plan v%d %q is done (%d of %d). Post a short summary of what changed for the user.", p.Version, p.Body.Title, done, total)})
		ch.Events = []Event{t.event(EventStepUpdated, "agent", &p, fmt.Sprintf("%d/%d done", done, total)), t.event(EventCompleted, "agent", &p, "")}
		ch.CancelNudges = true
	} else {
		ch.Events = []Event{t.event(EventStepUpdated, "agent", &p, fmt.Sprintf("%d/%d done", done, total))}
	}
	res := toolResult{content: fmt.Sprintf("Plan updated: %d of %d steps done.", done, total)}
	if complete {
		res.content = fmt.Sprintf("Plan updated: all %d steps are done and plan v%d is complete.", total, p.Version)
	}
	res.change = &stateChange{next: next, ch: ch, after: func(ctx context.Context) {
		e.refreshFile(ctx, t.sess, p)
		text := fmt.Sprintf("Plan v%d — %s: %d of %d steps done\n%s", p.Version, p.Body.Title, done, total, Checklist(steps))
		e.postProgress(ctx, t.sess.Address, p.ID, text)
		if complete {
			e.nudgesChanged(ctx, t.sess.ID)
			e.forgetProgress(p.ID)
			e.reply(ctx, t.to(), fmt.Sprintf("Done: %d of %d steps. Plan v%d completed.", done, total, p.Version))
		}
	}}
	return res
}

// postProgress sends the checklist, editing the plan's earlier checklist message in place
// where the channel can.
func (e *Engine) postProgress(ctx context.Context, to Address, planID, text string) {
	e.mu.Lock()
	prev := e.progress[planID]
	e.mu.Unlock()
	id, err := e.send(ctx, Reply{To: to, Kind: ReplyProgress, Text: text, ReplaceID: prev})
	if err != nil {
		return
	}
	if id == "" {
		id = prev
	}
	e.mu.Lock()
	e.progress[planID] = id
	e.mu.Unlock()
}

func (e *Engine) forgetProgress(planID string) {
	e.mu.Lock()
	delete(e.progress, planID)
	e.mu.Unlock()
}

// writePlanFile renders a plan and writes it under the plans directory.
func (e *Engine) writePlanFile(s Session, p Plan) (string, error) {
	name := PlanFileName(p.CreatedAt, p.Body.Title, p.Version)
	if p.File != "" {
		name = fileBase(p.File)
	}
	return WritePlanFile(e.cfg.PlansDir, s.Address.Dir(), name, RenderPlanMarkdown(p, s.Phase, s.Address.Chat))
}

// refreshFile rewrites a plan's file after its status or steps changed. The database is
// the record; a failure here is logged, not fatal.
//
// The write happens in the background, off the decision's path: writes of one file are
// coalesced and applied in order by a single writer, and Engine.Wait waits for them.
func (e *Engine) refreshFile(_ context.Context, s Session, p Plan) {
	if p.File == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refresh == nil {
		e.refresh = map[string]func(){}
	}
	e.refresh[p.File] = func() {
		if _, err := e.writePlanFile(s, p); err != nil {
			e.d.Log.Error("refreshing plan file", "plan", p.ID, "err", err)
		}
	}
	if !e.refreshing {
		e.refreshing = true
		go e.writeFiles()
	}
}

// writeFiles applies pending plan file refreshes until none are left.
func (e *Engine) writeFiles() {
	for {
		e.mu.Lock()
		var write func()
		for path, w := range e.refresh {
			write = w
			delete(e.refresh, path)
			break
		}
		if write == nil {
			e.refreshing = false
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		write()
	}
}

// droppedOpenSteps names steps of the accepted plan that an update left out while they
// were not finished: the user accepted them, so they can be cancelled but not vanish.
func droppedOpenSteps(before, after []Step) []string {
	kept := map[string]bool{}
	for _, s := range after {
		kept[s.ID] = true
	}
	var out []string
	for _, s := range before {
		if !kept[s.ID] && s.Status != StepCompleted && s.Status != StepCancelled {
			out = append(out, s.Text)
		}
	}
	return out
}
