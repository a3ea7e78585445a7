package machine

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Apply is the approval state machine as a pure function: from a session, its current
// plan (nil if none), a trigger and its input, it returns what the transition changes and
// what must happen afterwards (the engine's applier commits and runs it), or a refusal.
// An error means inconsistent inputs: awaiting approval without a plan, or a plan row read
// around another process's commit (wrapping ErrConflict).
func Apply(s core.Session, cur *core.Plan, t Trigger, in Input) (Outcome, error) {
	x := &transition{m: NewMachine(), s: s, cur: cur, in: in, next: s,
		o: Outcome{Trigger: t, Session: s, before: s, copies: in.Rules.WorkspaceCopy}}
	run, ok := x.handler(t)
	if !ok {
		return Outcome{}, fmt.Errorf("unknown trigger %q", t)
	}
	for _, g := range x.m.guards[t] { // read in place, not copied as Guards does
		pass, err := x.check(g)
		if err != nil {
			return Outcome{}, err
		}
		if !pass {
			return x.finish(), nil
		}
	}
	if err := run(); err != nil {
		return Outcome{}, err
	}
	return x.finish(), nil
}

// handler is the transition of trigger t, run once its guards passed.
func (x *transition) handler(t Trigger) (func() error, bool) {
	plain := func(f func()) func() error { return func() error { f(); return nil } }
	h, ok := map[Trigger]func() error{
		TrigOn:          plain(x.planOn),
		TrigOff:         x.planOff,
		TrigAccept:      x.accept,
		TrigApprove:     x.accept, // accept decides which of the two it is
		TrigRevise:      x.revise,
		TrigAnswer:      x.answer,
		TrigAutoOn:      func() error { return x.auto(true) },
		TrigAutoOff:     func() error { return x.auto(false) },
		TrigExpire:      x.expire,
		TrigEnter:       plain(x.enter),
		TrigPropose:     x.propose,
		TrigAutoPropose: x.propose,
		TrigAsk:         x.ask,
		TrigUpdate:      x.update,
		TrigComplete:    x.update,
		TrigEdit:        x.edit,
		TrigComment:     x.comment,
	}[t]
	return h, ok
}

// transition is one Apply call in progress.
type transition struct {
	m    Machine
	s    core.Session
	cur  *core.Plan
	in   Input
	next core.Session // the session being built
	o    Outcome

	// What the guards found out, for the transition.
	phase       core.Phase      // GuardPhase: where the trigger leads
	target      core.Plan       // GuardPending: the version decided on
	body        plan.Body       // GuardValidPlan
	question    *core.Question  // GuardValidQuestion
	stepUpdate  plan.UpdateArgs // GuardValidUpdate
	answerText  string          // GuardOption: the option the answer picked
	editDiff    plan.Diff       // GuardEditedFile: what the edited file changes (x.body is the new body)
	answeredIDs []string        // GuardValidPlan: the comment ids the proposal says it answered
}

// finish stores the next session in the outcome and derives the implied effects. Any
// state change, audit row or transcript entry goes with a new session row version.
func (x *transition) finish() Outcome {
	o := x.o
	if ch := o.Change; o.Refusal == nil && (len(ch.Events) > 0 || len(ch.Plans) > 0 || len(ch.Messages) > 0) {
		next := x.next
		next.UpdatedAt = x.in.Now
		o.Session = next
		o.Change.Session = &next
	}
	return o.seal()
}

// refuse ends the transition with a refusal; audit rows are optional.
func (x *transition) refuse(text string, audit ...core.Event) {
	x.o.Refusal = &Refusal{Text: text, Audit: audit}
}

func (x *transition) refusef(format string, args ...any) { x.refuse(fmt.Sprintf(format, args...)) }

// event builds an audit row by the input's actor; plan may be nil.
func (x *transition) event(kind core.EventKind, plan *core.Plan, detail string) core.Event {
	return x.eventBy(x.in.Actor, kind, plan, detail)
}

func (x *transition) eventBy(a core.Actor, kind core.EventKind, plan *core.Plan, detail string) core.Event {
	ev := core.Event{SessionID: x.s.ID, Kind: kind, Actor: a, Channel: x.s.Address.Channel, Detail: detail, At: x.in.Now}
	if plan != nil {
		ev.PlanID = plan.ID
		ev.PlanVersion = plan.Version
	}
	return ev
}

func (x *transition) record(evs ...core.Event) {
	x.o.Change.Events = append(x.o.Change.Events, evs...)
}

// settle moves plan p along the plan-status table for trigger t and records it in the
// change. how, when set, is shown where the version's buttons were ("accepted by alice").
func (x *transition) settle(p core.Plan, t Trigger, how string) (core.Plan, error) {
	to, ok := x.m.PlanNext(p.Status, t)
	if !ok {
		// The session and the plan row disagree: they were read around another process's
		// commit (a store read is not one snapshot), and committing would lose the session
		// row's compare-and-set anyway.
		return p, fmt.Errorf("plan %s is %s, which %s does not change: %w", p.ID, p.Status, t, core.ErrConflict)
	}
	if p.Status == core.PlanAccepted && to != core.PlanAccepted {
		x.o.leftAccepted(p.ID)
	}
	p.Status = to
	p.UpdatedAt = x.in.Now
	if how != "" {
		if x.o.retired == nil {
			x.o.retired = map[string]string{}
		}
		x.o.retired[p.ID] = how
	}
	x.o.Change.Plans = append(x.o.Change.Plans, p)
	return p, nil
}

// decide settles p and records who decided, when and why.
func (x *transition) decide(p core.Plan, t Trigger, outcome, feedback, how string) (core.Plan, error) {
	p.Decision = &plan.Decision{By: decidedBy(x.in.Actor), ByName: x.in.Name, At: x.in.Now, Channel: x.s.Address.Channel,
		Outcome: outcome, Feedback: feedback}
	return x.settle(p, t, how)
}

// decidedBy is the Decision.By of an actor: a person's or rule's id, else the kind.
func decidedBy(a core.Actor) string { return cmp.Or(a.ID, string(a.Kind)) }

func (x *transition) by() string { return "by " + x.in.who() }

func (x *transition) planOn() {
	x.next.Phase = x.phase
	x.next.Question = nil
	// A bare /plan on asks for nothing: whoever writes the request is its requester.
	x.next.Requesters = nil
	if x.in.Text != "" {
		x.next.Requesters = Asked(nil, x.in.Requester, x.in.Name)
	}
	x.record(x.event(core.EventEntered, nil, "by /plan on"))
	if x.in.Text != "" {
		x.o.Change.Messages = []core.ChatMessage{{Role: core.RoleUser, Content: x.in.Text, Name: x.in.Name, At: x.in.Now}}
	}
	x.o.say(core.ReplyText, "Plan mode is on. I'll look around (read-only) and propose a plan.")
}

// leavePlanMode sets the session's next row to phase with nothing of plan mode left
// waiting (no approval, question, requesters, reminders; people's queued messages stay,
// so they still get their answer).
func (x *transition) leavePlanMode(phase core.Phase) {
	n := &x.next
	n.Phase, n.ApprovalID, n.Question, n.Requesters = phase, "", nil, nil
	n.Injections = onlyKind(n.Injections, core.InjectMessage)
	x.o.Change.CancelNudges = true
}

func (x *transition) planOff() error {
	x.leavePlanMode(x.phase)
	text := "Plan mode is off."
	status, decided := core.PlanStatus(""), false
	if x.cur != nil && (x.s.Phase == core.PhaseAwaitingApproval || x.s.Phase == core.PhaseExecuting) {
		status, decided = x.m.PlanNext(x.cur.Status, TrigOff)
	}
	if !decided {
		x.record(x.event(core.EventExited, nil, "by /plan off"))
		x.o.say(core.ReplyText, text)
		return nil
	}
	p, err := x.decide(*x.cur, TrigOff, string(status), "", string(status)+" (/plan off "+x.by()+")")
	if err != nil {
		return err
	}
	if status == core.PlanAbandoned {
		x.record(x.event(core.EventAbandoned, &p, "by /plan off"))
		text += fmt.Sprintf(" %s was abandoned.", PlanLabel(p))
	} else {
		x.record(x.event(core.EventAborted, &p, "by /plan off"))
		completed, cancelled, total := stepCounts(p.Body.Steps)
		if cancelled > 0 {
			// A cancelled step is not done: say so, as the completion message does.
			text += fmt.Sprintf(" %s was stopped with %s.", PlanLabel(p), progressWords(p.Body.Steps))
		} else {
			text += fmt.Sprintf(" %s was stopped after %d of %d steps.", PlanLabel(p), completed, total)
		}
	}
	x.o.say(core.ReplyText, text)
	return nil
}

// pending resolves which version a decision is about (GuardPending) and refuses a typed
// decision that names another one. Revise while executing is about the accepted plan.
func (x *transition) pending() (bool, error) {
	in := x.in
	verb := "accept"
	if x.o.Trigger == TrigComment {
		verb = "comment on"
	}
	if x.o.Trigger == TrigRevise {
		verb = "revise"
		if x.s.Phase == core.PhaseExecuting && in.ApprovalID == "" {
			if x.cur == nil {
				x.refusePhase(verb)
				return false, nil
			}
			x.target = *x.cur
			return true, nil
		}
	}
	if x.s.Phase != core.PhaseAwaitingApproval {
		x.refusePhase(verb)
		return false, nil
	}
	if x.cur == nil {
		return false, fmt.Errorf("session %s awaits approval without a plan", x.s.ID)
	}
	p := *x.cur
	if p.Status != core.PlanPending {
		// Read around another process's decision (see settle): refusing on this state
		// ("you already approved", counted approvals) would answer one that never existed.
		return false, fmt.Errorf("session %s awaits approval but plan %s is %s: %w", x.s.ID, p.ID, p.Status, core.ErrConflict)
	}
	if in.Version == 0 && in.ApprovalID == "" && in.SeenApproval != nil && *in.SeenApproval != p.ApprovalID {
		// The person could not have seen this version when they sent a bare decision.
		x.refuse(PlanLabel(p) + " was proposed after your message, so " + x.notTaken(p))
		return false, nil
	}
	if in.Version != 0 && in.Version != p.Version {
		if in.Version < p.Version && in.Ref != nil && in.Ref.Version == in.Version {
			x.staleVersion(*in.Ref)
		} else {
			x.refusef("There is no plan v%d. %s is waiting: /plan accept", in.Version, PlanLabel(p))
		}
		return false, nil
	}
	x.target = p
	return true, nil
}

// notTaken says, for a decision made before version p was proposed, what did not happen
// and what to do instead.
func (x *transition) notTaken(p core.Plan) string {
	switch x.o.Trigger {
	case TrigComment:
		return "your comment was not recorded on it. Look at it, then comment again (its steps may differ)."
	case TrigRevise:
		return "it was not sent back. Look at it, then /plan revise <feedback>."
	}
	return fmt.Sprintf("it was not accepted. Look at it, then /plan accept v%d.", p.Version)
}

// stale refuses a button whose approval id is not the pending one.
func (x *transition) stale() {
	switch ref := x.in.Ref; {
	case ref == nil:
		x.refuse("That button is no longer valid; nothing changed. /plan status shows what is pending.")
	case ref.SessionID != x.s.ID:
		x.refuse("That button belongs to another conversation; nothing changed.")
	default:
		x.staleVersion(*ref)
	}
}

// staleVersion explains why a decision about an older plan version changes nothing.
func (x *transition) staleVersion(old core.Plan) {
	audit := x.event(core.EventRefused, &old, "stale decision on v"+strconv.Itoa(old.Version))
	cur := x.cur
	switch {
	case old.Status == core.PlanSuperseded && cur != nil && cur.Version > old.Version:
		next := "/plan status shows where things stand."
		if cur.Status == core.PlanPending {
			next = "/plan accept decides on it."
		}
		x.refuse(fmt.Sprintf("Plan v%d was superseded by v%d %q; nothing changed. %s", old.Version, cur.Version, cur.Body.Title, next), audit)
	case old.Decision != nil:
		by := cmp.Or(old.Decision.ByName, old.Decision.By)
		x.refuse(fmt.Sprintf("%s was already decided (%s by %s); nothing changed.", PlanLabel(old), old.Decision.Outcome, by), audit)
	default:
		x.refuse(fmt.Sprintf("%s is no longer pending (%s); nothing changed.", PlanLabel(old), old.Status), audit)
	}
}

// refusePhase answers a command that the current phase does not allow.
func (x *transition) refusePhase(what string) {
	switch x.s.Phase {
	case core.PhaseOff:
		x.refusef("There is no plan to %s (phase: off). Start one with /plan on <goal>.", what)
	case core.PhasePlanning:
		x.refusef("There is no plan to %s yet (phase: planning): I'm still working on one. /plan status shows where things stand.", what)
	case core.PhaseExecuting:
		if p := x.cur; p != nil {
			x.refusef("Plan v%d %q is already accepted and being carried out (phase: executing). To change course: /plan revise <feedback>.", p.Version, p.Body.Title)
		} else {
			x.refusef("Nothing to %s (phase: executing).", what)
		}
	case core.PhaseAwaitingApproval:
		var v int
		var title string
		if p := x.cur; p != nil {
			v, title = p.Version, p.Body.Title
		}
		x.refusef("Plan v%d %q is waiting for a decision (phase: awaiting_approval): /plan accept · /plan revise <feedback>.", v, title)
	}
}

// PlanLabel names a plan version in replies: Plan v2 "Docs".
func PlanLabel(p core.Plan) string { return fmt.Sprintf("Plan v%d %q", p.Version, p.Body.Title) }
