package machine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// The agent's plan tools as transitions of Apply. A refusal reaches the model as a tool
// error, never the chat.

// tool sets what the model is told.
func (x *transition) tool(endTurn bool, format string, args ...any) {
	x.o.Tool = &ToolReply{Content: fmt.Sprintf(format, args...), EndTurn: endTurn}
}

func (x *transition) enter() {
	x.next.Phase = x.phase
	x.next.Requesters = WithRequesters(x.s.Requesters, x.in.Asked)
	x.record(x.event(core.EventEntered, nil, "enter_plan_mode"))
	x.o.say(core.ReplyText, "Plan mode is on. I'll look around (read-only) and propose a plan.")
	x.tool(false, "Plan mode is on. Investigate with read-only tools, then propose a plan with exit_plan_mode.")
}

// propose stores a valid proposal as a new plan version and posts it for a decision, or
// accepts it at once when the trigger is TrigAutoPropose (auto-approve is on).
func (x *transition) propose() error {
	in, body := x.in, x.body
	prev, hash := x.cur, plan.Hash(body)
	if prev != nil && prev.Status == core.PlanPending && prev.Hash == hash {
		x.o.say(core.ReplyNotice, fmt.Sprintf("%s is unchanged and still waiting: /plan accept · /plan revise <feedback>", PlanLabel(*prev)))
		x.tool(true, "This plan is identical to the pending plan v%d, which is still waiting for the user's decision. Stop here.", prev.Version)
		return nil
	}
	how, ok, err := x.howTaken(body)
	if err != nil || !ok {
		return err
	}
	trig := x.o.Trigger
	x.next.Requesters = WithRequesters(x.s.Requesters, in.Asked)
	plan, err := x.newVersion(trig, hash)
	if err != nil {
		return err
	}
	n := &x.next
	n.Phase, n.PlanID, n.ApprovalID, n.Question = x.phase, plan.ID, plan.ApprovalID, nil
	superseded := 0
	if prev != nil && prev.Status == core.PlanPending {
		old := *prev
		voidApprovals(&old) // a new version needs its own approvals
		old, err := x.settle(old, trig, fmt.Sprintf("superseded by v%d", plan.Version))
		if err != nil {
			return err
		}
		superseded = old.Version
		x.record(x.event(core.EventSuperseded, &old, fmt.Sprintf("by v%d", plan.Version)))
	}
	x.record(x.event(core.EventProposed, &plan, body.Title))
	// Whatever was scheduled before (an older version, a question) is replaced.
	x.o.Change.CancelNudges = true
	if trig == TrigPropose {
		held := ""
		if in.AutoHeld != "" {
			held = " Auto-approve did not take it: " + in.AutoHeld + ", so a person decides."
		}
		x.tool(true, "Plan v%d posted for approval.%s Stop here and wait for [PLAN_DECISION].", plan.Version, held)
		x.o.Change.Nudges = append(reminders(*n, in.Rules, plan.ID, in.Now), expiry(*n, in.Rules, plan.ID, in.Now)...)
	} else {
		x.autoAccept(&plan, how)
	}
	x.o.newPlan = plan.ID
	x.o.Change.Plans = append(x.o.Change.Plans, plan)
	r := PlanReply(x.next, plan)
	pol := x.policy(&plan.Body)
	decide := decideLine(plan, in.AutoHeld, how.why, len(in.Rules.AutoRules) > 0 && trig == TrigPropose && in.AutoHeld == "" && !pol.strict())
	if plan.Status == core.PlanPending && pol.strict() {
		// /plan auto is refused here: offer only what works.
		decide = "Decide: /plan accept · /plan revise <feedback>" + pol.needs(plan.Requesters) + x.stuck(plan)
	}
	r.Text = proposalText(plan, "", superseded, decide, in.Rules)
	x.o.sayReply(r, "The plan could not be delivered here ({error}). It is saved as "+plan.File+"; /plan show sends it again.")
	return nil
}

// taken is the auto-approve rule that took a proposal (byRule), with why in words.
type taken struct {
	rule   ApproveRule
	why    string
	byRule bool
}

// howTaken settles the proposal's trigger, and with it x.phase: waiting for people
// (TrigPropose) or accepted at once (TrigAutoPropose). Auto-approve does not hold under a
// strict policy, and a rule that covers the plan accepts it as auto-approve would; either
// change asks the phase table again. ok is false when it refuses.
func (x *transition) howTaken(body plan.Body) (taken, bool, error) {
	var how taken
	if x.o.Trigger == TrigAutoPropose && x.policy(&body).strict() {
		x.o.Trigger = TrigPropose
		if ok, err := x.check(GuardPhase); err != nil || !ok {
			return how, false, err
		}
	}
	how.rule, how.why, how.byRule = x.ruleFor(body)
	if how.byRule {
		x.o.Trigger = TrigAutoPropose
		if ok, err := x.check(GuardPhase); err != nil || !ok {
			return how, false, err
		}
	}
	return how, true, nil
}

// newVersion is the plan version the proposal makes, with what changed from the version
// it answers (in its file and its chat message).
func (x *transition) newVersion(trig Trigger, hash string) (core.Plan, error) {
	in, body, prev := x.in, x.body, x.cur
	status, ok := x.m.PlanNext("", trig)
	if !ok {
		return core.Plan{}, fmt.Errorf("no plan status for a new version on %s", trig)
	}
	np := core.Plan{ID: in.IDs.Plan, ApprovalID: in.IDs.Approval, SessionID: x.s.ID, Version: 1, Status: status,
		Body: body, Hash: hash, Requesters: x.next.Requesters, Run: plan.Run{Tree: in.Tree}, CreatedAt: in.Now, UpdatedAt: in.Now}
	if prev != nil {
		np.Version = prev.Version + 1
	}
	np.File = filepath.Join(in.Rules.PlansDir, x.s.Address.Dir(), plan.FileName(np.CreatedAt, body.Title, np.Version))
	// A version that ended (completed, aborted, abandoned) is not one the new version answers.
	if prev != nil && !slices.Contains([]core.PlanStatus{core.PlanCompleted, core.PlanAborted, core.PlanAbandoned}, prev.Status) {
		d := plan.Compare(prev.Body, body)
		d.From = prev.Version
		d.Comments = x.answerComments(*prev, np.Version)
		if !d.Empty() {
			np.Changes = &d
		}
	}
	return np, nil
}

// autoAccept accepts plan as it is proposed, by auto-approve or by how's rule.
func (x *transition) autoAccept(np *core.Plan, how taken) {
	in, n := x.in, &x.next
	actor, why := core.AutoRule, "auto-approve is on"
	if how.byRule {
		actor, why = how.rule.Actor(), how.why
	}
	np.Decision = &plan.Decision{By: decidedBy(actor), At: in.Now, Channel: x.s.Address.Channel, Outcome: "auto_accepted"}
	n.ApprovalID = ""
	n.Injections = append(n.Injections, approvedInjection(*np, why))
	x.record(x.eventBy(actor, core.EventAutoAccepted, np, why))
	x.tool(true, "Plan v%d was auto-approved (%s). Stop here; the decision arrives as [PLAN_DECISION].", np.Version, why)
}

// ruleFor finds the auto-approve rule that accepts a proposal made while auto-approve is
// off, with why in words. A proposal no person's message led to is never taken: like
// auto-approve, rules do not chain on the agent's own work.
func (x *transition) ruleFor(body plan.Body) (ApproveRule, string, bool) {
	if x.o.Trigger != TrigPropose || x.in.Unattended != "" || x.policy(&body).strict() {
		return ApproveRule{}, "", false
	}
	return MatchAutoRule(x.in.Rules.AutoRules, body)
}

// validQuestion parses ask_user_question (GuardValidQuestion).
func (x *transition) validQuestion() bool {
	var a struct {
		Question      string   `json:"question"`
		Options       []string `json:"options"`
		AllowFreeText bool     `json:"allow_freetext"`
	}
	if err := strictJSON(x.in.Args, &a); err != nil {
		x.refusef("ask_user_question arguments: %v", err)
		return false
	}
	a.Question = strings.TrimSpace(a.Question)
	var opts []string
	for _, o := range a.Options {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}
	if a.Question == "" || len(opts) < 2 || len(opts) > 6 {
		x.refusef("ask_user_question needs a question and 2-6 non-empty options (got %d)", len(opts))
		return false
	}
	// The question reaches people as it is: the judge's limits on length and on invisible
	// or control characters hold for it as for a plan.
	notes := plan.TextProblems("the question", a.Question)
	for i, o := range opts {
		notes = append(notes, plan.LineProblems(fmt.Sprintf("option %d", i+1), o)...)
	}
	if len(notes) > 0 {
		x.refusef("ask_user_question refused: %s", strings.Join(notes, "; "))
		return false
	}
	x.question = &core.Question{ID: x.in.IDs.Question, Text: a.Question, Options: opts, AllowFreeText: a.AllowFreeText, AskedAt: x.in.Now}
	return true
}

func (x *transition) ask() error {
	q := x.question
	x.next.Phase = x.phase
	x.next.Question = q
	x.record(x.event(core.EventAsked, nil, q.Text))
	if err := x.waitForAnswer(q); err != nil {
		return err
	}
	x.o.Change.CancelReminders = true
	x.o.Change.Nudges = reminders(x.next, x.in.Rules, "", x.in.Now)
	x.o.sayReply(questionReply(x.s.Address, q), "A question could not be delivered here; /plan status shows it.")
	x.tool(true, "Question posted. Stop here; the answer arrives as [QUESTION_ANSWER].")
	return nil
}

// waitForAnswer records a question asked while a plan executes as the plan's stop
// (requires_human_decision, audited stopped): the plan waits for a person, and the
// answer ends the stop (answered).
func (x *transition) waitForAnswer(q *core.Question) error {
	if x.s.Phase != core.PhaseExecuting || x.cur == nil {
		return nil
	}
	p := *x.cur
	msg := fmt.Sprintf("Waiting for a person's answer: %s Answer: /plan answer <number>", q.Text)
	p.Run.Stop = &plan.Stop{Kind: plan.StopHumanDecision, Message: msg, At: x.in.Now}
	if _, err := x.settle(p, TrigAsk, ""); err != nil {
		return err
	}
	x.record(x.event(core.EventStopped, &p, string(plan.StopHumanDecision)+": "+msg))
	return nil
}

// answered ends the executing plan's stop that waited for the answer (waitForAnswer).
func (x *transition) answered() error {
	if x.s.Phase != core.PhaseExecuting || x.cur == nil || x.cur.Run.Stop == nil || x.cur.Run.Stop.Kind != plan.StopHumanDecision {
		return nil
	}
	p := *x.cur
	p.Run.Stop = nil
	_, err := x.settle(p, TrigAnswer, "")
	return err
}

// update applies step progress to the accepted plan, completing it (TrigComplete) when
// every step is done. It changes only the steps' status and verified criteria: a
// different plan is a new version, which needs a person's decision.
func (x *transition) update() error {
	if x.s.Phase == core.PhasePlanning {
		x.tool(false, notedDrafts)
		return nil
	}
	if x.cur == nil {
		x.refuse("no accepted plan is loaded")
		return nil
	}
	p, u := *x.cur, x.stepUpdate
	steps, err := plan.ApplyUpdate(p.Body.Steps, u)
	if err != nil {
		x.refusef("%v", err)
		return nil
	}
	steps, changes := keepAccepted(p.Body.Steps, steps, u.Merge)
	if len(changes) > 0 {
		x.refusef("update_plan may only change the status and verified criteria of the accepted plan's steps, but this update %s. "+
			"A plan with other steps is a new version, which needs a person's decision: carry out or cancel the steps as accepted, "+
			"and say in your reply what should change (the user can send the plan back with /plan revise)", strings.Join(changes, "; "))
		return nil
	}
	if problems := updateProblems(p, steps, u); len(problems) > 0 {
		x.refuse(plan.Problems(problems).Error())
		return nil
	}
	x.o.Trigger = TrigUpdate
	if plan.AllDone(steps) {
		if len(plan.Commands(p.Body.Verification)) > 0 && !x.verified(&p) {
			if x.o.Refused() {
				return nil
			}
			return x.unverified(p)
		}
		x.o.Trigger = TrigComplete
	}
	return x.progress(p, steps)
}

// unverified records a failed verification on p, whose steps stay as they were: the
// plan is not done, and the model was told why (verified).
func (x *transition) unverified(p core.Plan) error {
	reply := x.o.Tool
	if ok, err := x.check(GuardPhase); err != nil || !ok {
		return err
	}
	p, err := x.settle(p, TrigUpdate, "")
	if err != nil {
		return err
	}
	x.record(x.eventBy(core.AgentActor, core.EventVerification, &p, plan.VerificationSummary(*p.Run.Verification)))
	x.o.Tool = reply
	return nil
}

// progress records the new steps of p, and completes the plan when they are all done.
func (x *transition) progress(p core.Plan, steps []plan.Step) error {
	trig := x.o.Trigger
	if ok, err := x.check(GuardPhase); err != nil || !ok {
		return err // the table decides again: update and complete lead to different phases
	}
	to := x.phase
	p.Body.Steps = steps
	if trig == TrigComplete {
		p.Run.Stop = nil // a completed plan waits for no one
	}
	p, err := x.settle(p, trig, "")
	if err != nil {
		return err
	}
	if v := p.Run.Verification; v != nil && trig == TrigComplete {
		x.record(x.eventBy(core.AgentActor, core.EventVerification, &p, plan.VerificationSummary(*v)))
	}
	words := progressWords(steps)
	completed, cancelled, total := stepCounts(steps)
	x.record(x.eventBy(core.AgentActor, core.EventStepUpdated, &p, fmt.Sprintf("%d/%d done", completed+cancelled, total)))
	x.o.Effects = append(x.o.Effects, Effect{Kind: EffProgress, Plan: p, Reply: core.Reply{To: x.s.Address, Kind: core.ReplyProgress,
		Text: fmt.Sprintf("Plan v%d — %s: %s\n%s", p.Version, p.Body.Title, words, plan.Checklist(steps))}})
	x.tool(false, "Plan updated: %s.", words)
	if trig != TrigComplete {
		return nil
	}
	x.next.Phase = to
	x.next.Question = nil
	x.next.Requesters = nil
	x.next.Injections = append(x.next.Injections, core.Injection{Kind: core.InjectComplete,
		Text: fmt.Sprintf("[PLAN_COMPLETE]\nEvery step of plan v%d %q is finished (%s). Post a short summary of what changed for the user.", p.Version, p.Body.Title, words)})
	x.record(x.eventBy(core.AgentActor, core.EventCompleted, &p, words))
	x.o.Change.CancelNudges = true
	x.o.say(core.ReplyText, completionText(p))
	x.tool(false, "Plan updated: all %d steps are finished (%s) and plan v%d is complete.", total, words, p.Version)
	return nil
}

// completionText is the chat's message when a plan is finished: cancelled steps are not
// done, so it says how many were cancelled, and why.
func completionText(p core.Plan) string {
	completed, cancelled, total := stepCounts(p.Body.Steps)
	if cancelled == 0 {
		return fmt.Sprintf("Done: %d of %d steps. Plan v%d completed.", completed, total, p.Version)
	}
	var why []string
	for _, st := range p.Body.Steps {
		if st.Status == plan.StepCancelled {
			reason := OneLine(st.CancelReason)
			if reason == "" {
				reason = "no reason given"
			}
			why = append(why, fmt.Sprintf("%q: %s", st.Text, reason))
		}
	}
	return fmt.Sprintf("Finished plan v%d: %d of %d steps completed, %d cancelled (%s). Plan v%d completed.",
		p.Version, completed, total, cancelled, strings.Join(why, "; "), p.Version)
}

// keepAccepted returns the accepted steps, in their order and wording, with the status,
// verified criteria and cancellation reason the update gave them, and what else the update
// does to them: steps added or left out, acceptance criteria changed. Steps keep their ids
// through ApplyUpdate, so a reworded step is one left out and one added.
func keepAccepted(before, after []plan.Step, merge bool) ([]plan.Step, []string) {
	old := map[string]plan.Step{}
	for _, s := range before {
		old[s.ID] = s
	}
	updated := map[string]plan.Step{}
	var changes []string
	for _, s := range after {
		updated[s.ID] = s
		o, ok := old[s.ID]
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("adds step %q", s.Text))
		case !slices.Equal(o.AcceptanceCriteria, s.AcceptanceCriteria):
			changes = append(changes, fmt.Sprintf("changes the acceptance criteria of step %q", o.Text))
		}
	}
	out := plan.CloneSteps(before)
	for i, s := range out {
		u, ok := updated[s.ID]
		if !ok {
			hint := ""
			if !merge {
				hint = " (list every step, or use merge: true)"
			}
			changes = append(changes, fmt.Sprintf("leaves out step %q%s", s.Text, hint))
			continue
		}
		out[i].Status, out[i].VerifiedCriteria = u.Status, u.VerifiedCriteria
		if u.Status != plan.StepCancelled {
			out[i].CancelReason = ""
		}
	}
	return out, changes
}

// updateProblems applies the judge's limits to an update: the plan it leaves, and the
// explanation, which is the reason people are told for a step cancelled now.
func updateProblems(p core.Plan, steps []plan.Step, u plan.UpdateArgs) []string {
	problems := plan.LineProblems("update_plan: explanation", u.Explanation)
	for i, st := range steps {
		if st.Status != plan.StepCancelled || p.Body.Steps[i].Status == plan.StepCancelled {
			continue
		}
		steps[i].CancelReason = u.Explanation
	}
	body := p.Body
	body.Steps = steps
	if err := plan.Judge(body); err != nil {
		problems = append(problems, "update_plan: the plan it leaves breaks the plan rules:\n"+err.Error())
	}
	return problems
}

// strictJSON decodes tool arguments, refusing unknown fields.
func strictJSON(data json.RawMessage, v any) error {
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
