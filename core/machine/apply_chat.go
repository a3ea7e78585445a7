package machine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// Pure decisions outside the phase table (a person's plain message, /plan nudge), as
// Outcomes like Apply's for the one applier.

// ApplyMessage decides what a person's plain message does: it answers a pending question
// (an option, from someone who may answer), or it goes to the agent, entering plan mode
// first in a new session under plan_mode.start_in_plan.
func ApplyMessage(s core.Session, cur *core.Plan, text string, in Input) (Outcome, error) {
	if q := s.Question; q != nil && in.MayAnswer {
		if _, ok := matchOption(q, text); ok {
			in.Text = text
			return Apply(s, cur, TrigAnswer, in)
		}
		x := &transition{s: s, in: in, next: s, o: Outcome{Session: s, before: s}}
		x.refusef("A question is waiting: %s — %s. Answer with /plan answer <number or text>.", q.Text, OptionList(q.Options))
		return x.finish(), nil
	}
	x := &transition{m: NewMachine(), s: s, in: in, next: s, o: Outcome{Session: s, before: s}}
	x.o.Change.Messages = []core.ChatMessage{{Role: core.RoleUser, Content: text, Name: in.Name, At: in.Now}}
	if s.Version == 0 && in.Rules.PlanMode && in.Rules.StartInPlan {
		if to, ok := x.m.Next(s.Phase, TrigOn); ok {
			x.next.Phase = to
			x.next.Requesters = Asked(nil, in.Requester, in.Name)
			x.record(x.event(core.EventEntered, nil, "plan_mode.start_in_plan"))
			x.o.say(core.ReplyText, "Plan mode is on. I'll look around (read-only) and propose a plan.")
		}
	} else {
		// Whatever plan work follows (here or in the process holding the session's lease)
		// answers this message too: its author asked, until the plan work ends.
		x.next.Requesters = Asked(s.Requesters, in.Requester, in.Name)
	}
	// A message for the agent is no decision: unless it changes the phase it need not wait
	// for the disk (see Change.Lazy).
	x.o.Change.Lazy = x.next.Phase == s.Phase
	return x.finish(), nil
}

// Unauthorized is the refusal of a decision (what: the command or button) by someone who
// may not make it, with its audit row. approvers tells whether access.approvers is set.
func Unauthorized(s core.Session, in Input, what string, approvers bool) Outcome {
	verb := "decide on plans"
	if what == string(commands.Answer) {
		verb = "answer questions"
	}
	x := &transition{s: s, in: in, next: s, o: Outcome{Session: s, before: s}}
	text := fmt.Sprintf("Only %s, who started this conversation, can %s here.", s.Owner, verb)
	if approvers {
		text = fmt.Sprintf("Only approvers can %s here (%s is not one).", verb, in.who())
	}
	x.refuse(text, x.event(core.EventRefused, nil, fmt.Sprintf("%s by %s: not authorized", what, in.who())))
	return x.finish()
}

// NudgeSpecs checks and evaluates /plan nudge's recurring reminder specs (nudges.Specs):
// the cron grammar lives beside the scheduler, so the commands need only the standard library.
type NudgeSpecs interface {
	// Check says why a normalized spec is no schedule, in words a person can act on.
	Check(spec string, now time.Time) error
	// Next is the first time after `after` that spec fires.
	Next(spec string, after time.Time) (time.Time, error)
}

// errNoSpecs is what a recurring schedule gets when the engine has no NudgeSpecs.
var errNoSpecs = errors.New("recurring reminders are not available in this gateway")

// nextFire evaluates spec with the rules' NudgeSpecs.
func nextFire(r Rules, spec string, after time.Time) (time.Time, error) {
	if r.Specs == nil {
		return time.Time{}, errNoSpecs
	}
	return r.Specs.Next(spec, after)
}

// ApplyNudge decides /plan nudge: the session's reminder schedule and what waits now.
func ApplyNudge(s core.Session, r *commands.NudgeRequest, in Input) (Outcome, error) {
	x := &transition{s: s, in: in, next: s, o: Outcome{Session: s, before: s}}
	now := in.Now
	planID, waiting := PendingKey(s)
	ch := &x.o.Change
	var text string
	switch r.Mode {
	case commands.NudgeModeOff:
		x.next.NudgeSpec = core.NudgeOff
		ch.CancelReminders = true
		text = "Reminders are off for this conversation. /plan nudge every 2h turns them back on."
	case commands.NudgeModeSnooze:
		if !waiting {
			x.refuse("Nothing is waiting for a decision or an answer, so there is nothing to snooze.")
			return x.finish(), nil
		}
		at := now.Add(r.Duration)
		ch.CancelReminders = true
		ch.Nudges = []core.Nudge{{SessionID: s.ID, PlanID: planID, Kind: core.NudgeOnce, Action: core.NudgeRemind,
			Spec: r.Duration.String(), NextFireAt: at, Status: core.NudgeActive, CreatedAt: now}}
		text = fmt.Sprintf("Snoozed: the next reminder comes at %s (in %s).", core.Clock(at), core.HumanDuration(r.Duration))
	case commands.NudgeModeEvery, commands.NudgeModeCron:
		spec := r.Spec
		if r.Mode == commands.NudgeModeEvery {
			spec = "@every " + r.Duration.String()
		}
		first, err := nextFire(in.Rules, spec, now)
		if err != nil {
			x.refusef("That schedule cannot be used: %v. Nothing changed.", err)
			return x.finish(), nil
		}
		x.next.NudgeSpec = spec
		text = fmt.Sprintf("Reminders: %s while a decision or answer is pending.", DescribeSpec(spec))
		if waiting {
			ch.CancelReminders = true
			ch.Nudges = []core.Nudge{{SessionID: s.ID, PlanID: planID, Kind: core.NudgeRecurring, Action: core.NudgeRemind,
				Spec: spec, NextFireAt: first, Status: core.NudgeActive, CreatedAt: now}}
			text += fmt.Sprintf(" Next: %s.", core.Clock(first))
		}
	default:
		return Outcome{}, fmt.Errorf("unhandled nudge request %q", r.Mode)
	}
	x.record(x.event(core.EventNudgeSet, nil, string(r.Mode)+" "+x.next.NudgeSpec))
	x.o.say(core.ReplyText, text)
	return x.finish(), nil
}

// reminders are the schedules a decision (planID != "") or a question (planID == "") gets
// when it starts waiting: the session's own (none if it no longer parses), else the
// configured one-shots.
func reminders(s core.Session, r Rules, planID string, now time.Time) []core.Nudge {
	switch s.NudgeSpec {
	case core.NudgeOff:
		return nil
	case "":
		out := make([]core.Nudge, 0, len(r.Nudges))
		for _, d := range r.Nudges {
			out = append(out, core.Nudge{SessionID: s.ID, PlanID: planID, Kind: core.NudgeOnce, Action: core.NudgeRemind,
				Spec: d.String(), NextFireAt: now.Add(d), Status: core.NudgeActive, CreatedAt: now})
		}
		return out
	}
	next, err := nextFire(r, s.NudgeSpec, now)
	if err != nil {
		return nil
	}
	return []core.Nudge{{SessionID: s.ID, PlanID: planID, Kind: core.NudgeRecurring, Action: core.NudgeRemind,
		Spec: s.NudgeSpec, NextFireAt: next, Status: core.NudgeActive, CreatedAt: now}}
}

// expiry is the approval-timeout schedule of a plan, if one is configured.
func expiry(s core.Session, r Rules, planID string, now time.Time) []core.Nudge {
	if r.ApprovalTimeout <= 0 {
		return nil
	}
	d := r.ApprovalTimeout
	return []core.Nudge{{SessionID: s.ID, PlanID: planID, Kind: core.NudgeOnce, Action: core.NudgeExpire,
		Spec: d.String(), NextFireAt: now.Add(d), Status: core.NudgeActive, CreatedAt: now}}
}

// PendingKey names what waits in a session: a pending plan's id, or "" for a question.
func PendingKey(s core.Session) (planID string, ok bool) {
	switch {
	case s.Phase == core.PhaseAwaitingApproval && s.PlanID != "":
		return s.PlanID, true
	case s.Question != nil:
		return "", true
	}
	return "", false
}

func DescribeSpec(spec string) string {
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		if dd, err := time.ParseDuration(d); err == nil {
			return "every " + core.HumanDuration(dd)
		}
	}
	return "on the schedule " + spec
}
