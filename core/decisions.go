package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

func (t *turnState) statusText(ctx context.Context) string {
	s := t.sess
	p, ok, err := t.currentPlan(ctx)
	if err != nil {
		t.e.d.Log.Error("status: loading plan", "session", s.ID, "err", err)
	}
	parts := []string{"phase: " + string(s.Phase)}
	if ok {
		label := "plan"
		if s.Phase == PhaseOff || s.Phase == PhasePlanning {
			label = "last plan"
		}
		done, total := stepProgress(p.Body.Steps)
		parts = append(parts, fmt.Sprintf("%s: v%d %q (%s, %d/%d steps done)", label, p.Version, p.Body.Title, p.Status, done, total))
	}
	parts = append(parts, "auto-approve: "+onOff(s.AutoApprove))
	lines := []string{strings.Join(parts, " · ")}
	if q := s.Question; q != nil {
		lines = append(lines, "question: "+q.Text+" — "+optionList(q.Options)+" · /plan answer <number or text>")
	}
	if s.Phase == PhaseAwaitingApproval && ok {
		lines = append(lines, fmt.Sprintf("waiting since %s for /plan accept · /plan revise <feedback>", p.CreatedAt.UTC().Format("2006-01-02 15:04 MST")))
	}
	if s.RejectionCount > 0 {
		lines = append(lines, fmt.Sprintf("revisions requested: %d", s.RejectionCount))
	}
	lines = append(lines, t.nextNudgeLine(ctx))
	return strings.Join(lines, "\n")
}

func stepProgress(steps []Step) (done, total int) {
	for _, st := range steps {
		if st.Status == StepCompleted || st.Status == StepCancelled {
			done++
		}
	}
	return done, len(steps)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func optionList(opts []string) string {
	var b strings.Builder
	for i, o := range opts {
		if i > 0 {
			b.WriteString(" · ")
		}
		fmt.Fprintf(&b, "%d. %s", i+1, o)
	}
	return b.String()
}

func (t *turnState) show(ctx context.Context) error {
	p, ok, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	if !ok {
		t.e.reply(ctx, t.to(), "There is no plan in this conversation yet. Start one with /plan on <goal>.")
		return nil
	}
	// The file is a rendering of the stored plan: write it again if it was lost. (Only
	// then: show runs beside the session's queue and must not overwrite a newer rendering.)
	if _, err := os.Stat(p.File); errors.Is(err, fs.ErrNotExist) {
		if _, err := t.e.writePlanFile(t.sess, p); err != nil {
			t.e.d.Log.Error("writing plan file again", "plan", p.ID, "err", err)
		}
	}
	r := t.e.planReply(t.sess, p)
	r.Text = fmt.Sprintf("Plan v%d — %s (%s)\n%s", p.Version, p.Body.Title, p.Status, Checklist(p.Body.Steps))
	if p.Status == PlanPending {
		r.Text += "\nDecide: /plan accept · /plan revise <feedback> · /plan auto"
	}
	_, err = t.e.send(ctx, r)
	return err
}

// announceDecision tells the channel that the buttons of plan p are spent, and why.
func (e *Engine) announceDecision(ctx context.Context, s Session, p Plan, outcome string) {
	if p.ApprovalID == "" {
		return
	}
	_, _ = e.send(ctx, Reply{To: s.Address, Kind: ReplyDecided, Ref: p.ApprovalID,
		Text: fmt.Sprintf("Plan v%d %q — %s", p.Version, p.Body.Title, outcome)})
}

func (t *turnState) by() string { return "by " + t.personName() }

// planReply is the reply that carries a plan file, with decision buttons while pending.
func (e *Engine) planReply(s Session, p Plan) Reply {
	r := Reply{To: s.Address, Kind: ReplyPlan}
	if p.File != "" {
		r.Attachments = []File{{Name: fileBase(p.File), MIME: "text/markdown", Path: p.File}}
	}
	if p.Status == PlanPending && p.ApprovalID != "" {
		r.Buttons = []Button{
			{Label: "Accept", Action: Action{Kind: ActionAccept, ApprovalID: p.ApprovalID}},
			{Label: "Revise", Action: Action{Kind: ActionRevise, ApprovalID: p.ApprovalID}},
			{Label: "Auto", Action: Action{Kind: ActionAuto, ApprovalID: p.ApprovalID}},
		}
	}
	return r
}

func fileBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

func (t *turnState) planOn(ctx context.Context, goal string) error {
	if !t.e.cfg.PlanMode {
		t.notice(ctx, "Plan mode is disabled in this gateway's configuration (plan_mode.enabled: false).")
		return nil
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigOn)
	if !ok {
		t.notice(ctx, "Plan mode is already on (phase: %s). /plan status shows where things stand; /plan off leaves plan mode.", t.sess.Phase)
		return nil
	}
	next := t.sess
	next.Phase = to
	next.Question = nil
	detail := "by /plan on"
	ch := Change{Events: []Event{t.event(EventEntered, t.person(), nil, detail)}}
	if goal != "" {
		ch.Messages = []ChatMessage{t.userMessage(goal)}
	}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.reply(ctx, t.to(), "Plan mode is on. I'll look around (read-only) and propose a plan.")
	if goal == "" {
		return nil
	}
	return t.runTurns(ctx)
}

func (t *turnState) planOff(ctx context.Context) error {
	to, ok := t.e.machine.Next(t.sess.Phase, TrigOff)
	if !ok {
		t.notice(ctx, "Plan mode is already off. /plan on <goal> starts a plan.")
		return nil
	}
	next := t.sess
	next.Phase = to
	next.ApprovalID = ""
	next.Question = nil
	next.Injections = nil
	ch := Change{CancelNudges: true}
	text := "Plan mode is off."
	p, havePlan, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	switch {
	case t.sess.Phase == PhaseAwaitingApproval && havePlan:
		p = t.decided(p, PlanAbandoned, "abandoned", "")
		ch.Plans = []Plan{p}
		ch.Events = []Event{t.event(EventAbandoned, t.person(), &p, "by /plan off")}
		text += fmt.Sprintf(" Plan v%d %q was abandoned.", p.Version, p.Body.Title)
	case t.sess.Phase == PhaseExecuting && havePlan:
		p = t.decided(p, PlanAborted, "aborted", "")
		ch.Plans = []Plan{p}
		ch.Events = []Event{t.event(EventAborted, t.person(), &p, "by /plan off")}
		done, total := stepProgress(p.Body.Steps)
		text += fmt.Sprintf(" Plan v%d %q was stopped after %d of %d steps.", p.Version, p.Body.Title, done, total)
	default:
		ch.Events = []Event{t.event(EventExited, t.person(), nil, "by /plan off")}
	}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	if len(ch.Plans) > 0 {
		t.e.refreshFile(ctx, t.sess, ch.Plans[0])
		t.e.announceDecision(ctx, t.sess, ch.Plans[0], string(ch.Plans[0].Status)+" (/plan off "+t.by()+")")
		t.e.forgetProgress(ch.Plans[0].ID)
	}
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.reply(ctx, t.to(), text)
	return nil
}

// decided returns p with its status and decision record set by the current person.
func (t *turnState) decided(p Plan, status PlanStatus, outcome, feedback string) Plan {
	m := t.msg()
	p.Status = status
	p.UpdatedAt = t.e.d.Now()
	p.Decision = &Decision{By: m.Sender.ID, ByName: m.Sender.Name, At: p.UpdatedAt, Channel: m.Address.Channel, Outcome: outcome, Feedback: feedback}
	return p
}

// pendingFor resolves which plan a decision is about and refuses stale or foreign ones.
// approvalID comes from a button, version from "/plan accept vN"; both may be empty.
func (t *turnState) pendingFor(ctx context.Context, verb, approvalID string, version int) (Plan, bool, error) {
	if approvalID != "" && approvalID != t.sess.ApprovalID {
		old, err := t.e.d.Store.PlanByApproval(ctx, approvalID)
		switch {
		case err != nil:
			t.notice(ctx, "That button is no longer valid; nothing changed. /plan status shows what is pending.")
		case old.SessionID != t.sess.ID:
			t.notice(ctx, "That button belongs to another conversation; nothing changed.")
		default:
			return Plan{}, false, t.staleVersion(ctx, old)
		}
		return Plan{}, false, nil
	}
	if t.sess.Phase != PhaseAwaitingApproval {
		return Plan{}, false, t.refusePhase(ctx, verb)
	}
	p, ok, err := t.currentPlan(ctx)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("session %s awaits approval without a plan", t.sess.ID)
		}
		return Plan{}, false, err
	}
	if version == 0 && approvalID == "" && t.e.proposedAfter(t.sess.ID, p.ID, t.j) {
		// The person could not have seen this version when they sent a bare accept.
		t.notice(ctx, "Plan v%d %q was proposed after your message, so it was not accepted. Look at it, then /plan accept v%d.", p.Version, p.Body.Title, p.Version)
		return Plan{}, false, nil
	}
	if version != 0 && version != p.Version {
		if version > p.Version {
			t.notice(ctx, "There is no plan v%d. Plan v%d %q is waiting: /plan accept", version, p.Version, p.Body.Title)
			return Plan{}, false, nil
		}
		plans, err := t.e.d.Store.Plans(ctx, t.sess.ID)
		if err != nil {
			return Plan{}, false, fmt.Errorf("listing plans: %w", err)
		}
		for _, old := range plans {
			if old.Version == version {
				return Plan{}, false, t.staleVersion(ctx, old)
			}
		}
		t.notice(ctx, "There is no plan v%d. Plan v%d %q is waiting: /plan accept", version, p.Version, p.Body.Title)
		return Plan{}, false, nil
	}
	return p, true, nil
}

// staleVersion explains why a decision about an older plan version changes nothing.
func (t *turnState) staleVersion(ctx context.Context, old Plan) error {
	cur, ok, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	switch {
	case old.Status == PlanSuperseded && ok && cur.Version > old.Version:
		t.notice(ctx, "Plan v%d was superseded by v%d %q; nothing changed. %s", old.Version, cur.Version, cur.Body.Title, nextStep(cur))
	case old.Decision != nil:
		by := old.Decision.ByName
		if by == "" {
			by = old.Decision.By
		}
		t.notice(ctx, "Plan v%d %q was already decided (%s by %s); nothing changed.", old.Version, old.Body.Title, old.Decision.Outcome, by)
	default:
		t.notice(ctx, "Plan v%d %q is no longer pending (%s); nothing changed.", old.Version, old.Body.Title, old.Status)
	}
	return t.record(ctx, t.event(EventRefused, t.person(), &old, "stale decision on v"+strconv.Itoa(old.Version)))
}

func nextStep(p Plan) string {
	if p.Status == PlanPending {
		return "/plan accept decides on it."
	}
	return "/plan status shows where things stand."
}

func (t *turnState) accept(ctx context.Context, approvalID string, version int) error {
	p, ok, err := t.pendingFor(ctx, "accept", approvalID, version)
	if err != nil || !ok {
		return err
	}
	to, _ := t.e.machine.Next(t.sess.Phase, TrigAccept)
	p = t.decided(p, PlanAccepted, "accepted", "")
	next := t.sess
	next.Phase = to
	next.ApprovalID = ""
	next.Injections = append(next.Injections, approvedInjection(p, "approved by "+t.personName()))
	ch := Change{Plans: []Plan{p}, Events: []Event{t.event(EventAccepted, t.person(), &p, "")}, CancelNudges: true}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.refreshFile(ctx, t.sess, p)
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.announceDecision(ctx, t.sess, p, "accepted "+t.by())
	t.e.reply(ctx, t.to(), fmt.Sprintf("Accepted plan v%d %q. Working on it.", p.Version, p.Body.Title))
	return t.runTurns(ctx)
}

func approvedInjection(p Plan, how string) Injection {
	var b strings.Builder
	fmt.Fprintf(&b, "[PLAN_DECISION]: approved (%s)\nPlan v%d %q is accepted. Carry it out step by step; mark progress with update_plan (a step is completed only when its acceptance criteria are verified).\nSteps:\n", how, p.Version, p.Body.Title)
	for _, st := range p.Body.Steps {
		fmt.Fprintf(&b, "%s. %s\n", st.ID, st.Text)
		for _, c := range st.AcceptanceCriteria {
			fmt.Fprintf(&b, "   - criterion: %s\n", c)
		}
	}
	return Injection{Kind: InjectDecision, Text: strings.TrimRight(b.String(), "\n")}
}

func (t *turnState) revise(ctx context.Context, approvalID, feedback string) error {
	var p Plan
	if approvalID != "" || t.sess.Phase != PhaseExecuting {
		var ok bool
		var err error
		if p, ok, err = t.pendingFor(ctx, "revise", approvalID, 0); err != nil || !ok {
			return err
		}
	} else {
		var ok bool
		var err error
		if p, ok, err = t.currentPlan(ctx); err != nil {
			return err
		} else if !ok {
			return t.refusePhase(ctx, "revise")
		}
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigRevise)
	if !ok {
		return t.refusePhase(ctx, "revise")
	}
	p = t.decided(p, PlanRevised, "revised", feedback)
	next := t.sess
	next.Phase = to
	next.ApprovalID = ""
	next.RejectionCount++
	next.LastFeedback = feedback
	next.Question = nil
	// An approval that never reached the agent (its turn was interrupted) is void now.
	next.Injections = withoutKind(next.Injections, InjectDecision)
	text := fmt.Sprintf("[PLAN_DECISION]: rejected\nPlan v%d %q was sent back by %s with this feedback:\n%s\nRevise the plan and propose it again with exit_plan_mode.", p.Version, p.Body.Title, t.personName(), feedback)
	if next.RejectionCount >= 3 {
		text += fmt.Sprintf("\nThis is rejection number %d. Before proposing again, ask the user a clarifying question with ask_user_question.", next.RejectionCount)
	}
	next.Injections = append(next.Injections, Injection{Kind: InjectDecision, Text: text})
	ch := Change{Plans: []Plan{p}, Events: []Event{t.event(EventRevised, t.person(), &p, feedback)}, CancelNudges: true}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.refreshFile(ctx, t.sess, p)
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.announceDecision(ctx, t.sess, p, "sent back for revision "+t.by())
	t.e.forgetProgress(p.ID)
	t.e.reply(ctx, t.to(), fmt.Sprintf("Sent plan v%d back for revision (%s time). I'll propose a new version.", p.Version, ordinal(next.RejectionCount)))
	return t.runTurns(ctx)
}

func (t *turnState) answer(ctx context.Context, text string) error {
	q := t.sess.Question
	if q == nil {
		t.notice(ctx, "There is no question waiting for an answer (phase: %s).", t.sess.Phase)
		return nil
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigAnswer)
	if !ok {
		return t.refusePhase(ctx, "answer")
	}
	answer, ok := matchOption(q, text)
	if !ok {
		t.notice(ctx, "%q is not one of the options: %s. Answer with /plan answer <number or text>.", text, optionList(q.Options))
		return nil
	}
	next := t.sess
	next.Phase = to
	next.Question = nil
	next.Injections = append(next.Injections, Injection{Kind: InjectAnswer,
		Text: fmt.Sprintf("[QUESTION_ANSWER]: %s\nQuestion: %s\nAnswered by %s.", answer, q.Text, t.personName())})
	ch := Change{Events: []Event{t.event(EventAnswered, t.person(), nil, answer)}, CancelReminders: true}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.reply(ctx, t.to(), fmt.Sprintf("Answer recorded: %s", answer))
	return t.runTurns(ctx)
}

func withoutKind(in []Injection, k InjectionKind) []Injection {
	var out []Injection
	for _, i := range in {
		if i.Kind != k {
			out = append(out, i)
		}
	}
	return out
}

// matchOption resolves an answer: an option number, an option's text (case-insensitive),
// or free text when the question allows it.
func matchOption(q *Question, text string) (string, bool) {
	text = strings.TrimSpace(text)
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(q.Options) {
		return q.Options[n-1], true
	}
	for _, o := range q.Options {
		if strings.EqualFold(o, text) {
			return o, true
		}
	}
	if q.AllowFreeText && text != "" {
		return text, true
	}
	return "", false
}

func (t *turnState) auto(ctx context.Context, on bool, approvalID string) error {
	if approvalID != "" && approvalID != t.sess.ApprovalID {
		_, _, err := t.pendingFor(ctx, "auto-approve", approvalID, 0)
		return err
	}
	trig := TrigAutoOff
	if on {
		trig = TrigAutoOn
	}
	to, _ := t.e.machine.Next(t.sess.Phase, trig)
	if t.sess.AutoApprove == on && to == t.sess.Phase {
		t.notice(ctx, "Auto-approve is already %s for this conversation.", onOff(on))
		return nil
	}
	next := t.sess
	next.AutoApprove = on
	next.Phase = to
	ch := Change{Events: []Event{t.event(EventAutoChanged, t.person(), nil, "auto-approve "+onOff(on))}}
	text := fmt.Sprintf("Auto-approve is %s for this conversation.", onOff(on))
	if on {
		text += " New plans will be accepted as soon as they are proposed."
	}
	var accepted *Plan
	if to == PhaseExecuting && t.sess.Phase == PhaseAwaitingApproval {
		p, ok, err := t.currentPlan(ctx)
		if err != nil {
			return fmt.Errorf("loading pending plan: %w", err)
		}
		if !ok {
			return fmt.Errorf("session %s awaits approval without a plan", t.sess.ID)
		}
		p = t.decided(p, PlanAccepted, "auto_accepted", "")
		accepted = &p
		next.ApprovalID = ""
		next.Injections = append(next.Injections, approvedInjection(p, "auto-approve turned on by "+t.personName()))
		ch.Plans = []Plan{p}
		ch.Events = append(ch.Events, t.event(EventAutoAccepted, t.person(), &p, "auto-approve turned on"))
		ch.CancelNudges = true
		text += fmt.Sprintf(" Accepted the pending plan v%d %q. Working on it.", p.Version, p.Body.Title)
	}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.reply(ctx, t.to(), text)
	if accepted != nil {
		t.e.refreshFile(ctx, t.sess, *accepted)
		t.e.announceDecision(ctx, t.sess, *accepted, "accepted by auto-approve, turned on "+t.by())
		t.e.nudgesChanged(ctx, t.sess.ID)
		return t.runTurns(ctx)
	}
	return nil
}
