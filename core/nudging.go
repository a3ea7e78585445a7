package core

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/plangate/plangate/commands"
)

// EventNudgeSet audits a change of a session's reminder schedule by /plan nudge.
const EventNudgeSet EventKind = "nudge_set"

// NudgeOff is the Session.NudgeSpec of a session whose reminders are turned off.
const NudgeOff = "off"

// reminders are the schedules a decision (planID != "") or a question (planID == "") gets
// when it starts waiting: the session's own schedule, or the configured one-shots.
func (e *Engine) reminders(s Session, planID string, now time.Time) []Nudge {
	switch s.NudgeSpec {
	case NudgeOff:
		return nil
	case "":
		out := make([]Nudge, 0, len(e.cfg.Nudges))
		for _, d := range e.cfg.Nudges {
			out = append(out, Nudge{SessionID: s.ID, PlanID: planID, Kind: NudgeOnce, Action: NudgeRemind,
				Spec: d.String(), NextFireAt: now.Add(d), Status: NudgeActive, CreatedAt: now})
		}
		return out
	}
	next, err := commands.NextFire(s.NudgeSpec, now)
	if err != nil {
		e.d.Log.Error("session nudge schedule", "session", s.ID, "err", err)
		return nil
	}
	return []Nudge{{SessionID: s.ID, PlanID: planID, Kind: NudgeRecurring, Action: NudgeRemind,
		Spec: s.NudgeSpec, NextFireAt: next, Status: NudgeActive, CreatedAt: now}}
}

// expiry is the approval-timeout schedule of a plan, if one is configured.
func (e *Engine) expiry(s Session, planID string, now time.Time) []Nudge {
	if e.cfg.ApprovalTimeout <= 0 {
		return nil
	}
	d := e.cfg.ApprovalTimeout
	return []Nudge{{SessionID: s.ID, PlanID: planID, Kind: NudgeOnce, Action: NudgeExpire,
		Spec: d.String(), NextFireAt: now.Add(d), Status: NudgeActive, CreatedAt: now}}
}

// pendingKey names what is waiting in a session: the plan id of a pending plan, or "" for
// a pending question; ok is false when nothing waits.
func pendingKey(s Session) (planID string, ok bool) {
	switch {
	case s.Phase == PhaseAwaitingApproval && s.PlanID != "":
		return s.PlanID, true
	case s.Question != nil:
		return "", true
	}
	return "", false
}

// setNudge applies /plan nudge.
func (t *turnState) setNudge(ctx context.Context, r *commands.NudgeRequest) error {
	now := t.e.d.Now()
	next := t.sess
	planID, waiting := pendingKey(t.sess)
	ch := Change{}
	var text string
	switch r.Kind {
	case commands.NudgeOff:
		next.NudgeSpec = NudgeOff
		ch.CancelReminders = true
		text = "Reminders are off for this conversation. /plan nudge every 2h turns them back on."
	case commands.NudgeSnooze:
		if !waiting {
			t.notice(ctx, "Nothing is waiting for a decision or an answer, so there is nothing to snooze.")
			return nil
		}
		at := now.Add(r.Duration)
		ch.CancelReminders = true
		ch.Nudges = []Nudge{{SessionID: t.sess.ID, PlanID: planID, Kind: NudgeOnce, Action: NudgeRemind,
			Spec: r.Duration.String(), NextFireAt: at, Status: NudgeActive, CreatedAt: now}}
		text = fmt.Sprintf("Snoozed: the next reminder comes at %s (in %s).", clock(at), humanDuration(r.Duration))
	case commands.NudgeEvery, commands.NudgeCron:
		spec := r.Spec
		if r.Kind == commands.NudgeEvery {
			spec = "@every " + r.Duration.String()
		}
		first, err := commands.NextFire(spec, now)
		if err != nil {
			t.notice(ctx, "That schedule cannot be used: %v. Nothing changed.", err)
			return nil
		}
		next.NudgeSpec = spec
		text = fmt.Sprintf("Reminders: %s while a decision or answer is pending.", describeSpec(spec))
		if waiting {
			ch.CancelReminders = true
			ch.Nudges = []Nudge{{SessionID: t.sess.ID, PlanID: planID, Kind: NudgeRecurring, Action: NudgeRemind,
				Spec: spec, NextFireAt: first, Status: NudgeActive, CreatedAt: now}}
			text += fmt.Sprintf(" Next: %s.", clock(first))
		}
	default:
		return fmt.Errorf("unhandled nudge request %q", r.Kind)
	}
	ch.Events = []Event{t.event(EventNudgeSet, t.person(), nil, string(r.Kind)+" "+next.NudgeSpec)}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.reply(ctx, t.to(), text)
	return nil
}

func describeSpec(spec string) string {
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		if dd, err := time.ParseDuration(d); err == nil {
			return "every " + humanDuration(dd)
		}
	}
	return "on the schedule " + spec
}

// nextNudgeLine is the "next nudge" part of /plan status.
func (t *turnState) nextNudgeLine(ctx context.Context) string {
	ns, err := t.e.d.Store.Nudges(ctx, t.sess.ID)
	if err != nil {
		t.e.d.Log.Error("status: listing nudges", "session", t.sess.ID, "err", err)
		return "next nudge: unknown"
	}
	var remind, expire *Nudge
	for i := range ns {
		n := &ns[i]
		if n.Status != NudgeActive || n.NextFireAt.IsZero() {
			continue
		}
		switch {
		case n.Action == NudgeRemind && (remind == nil || n.NextFireAt.Before(remind.NextFireAt)):
			remind = n
		case n.Action == NudgeExpire && (expire == nil || n.NextFireAt.Before(expire.NextFireAt)):
			expire = n
		}
	}
	line := "next nudge: none"
	if remind != nil {
		line = fmt.Sprintf("next nudge: %s (in %s)", clock(remind.NextFireAt), humanDuration(remind.NextFireAt.Sub(t.e.d.Now())))
	}
	if t.sess.NudgeSpec == NudgeOff {
		line += " · reminders off"
	} else if t.sess.NudgeSpec != "" {
		line += " · reminders " + describeSpec(t.sess.NudgeSpec)
	}
	if expire != nil {
		line += fmt.Sprintf(" · expires %s", clock(expire.NextFireAt))
	}
	return line
}

// Nudge delivers one occurrence of a schedule that the scheduler has already recorded in
// the firing ledger. It runs in the session's queue, so a nudge that falls due during an
// agent turn arrives after that turn, and it is a system message: it never reaches the
// model as user input. A nudge whose decision was made meanwhile is dropped.
func (e *Engine) Nudge(ctx context.Context, n Nudge, scheduledAt time.Time) error {
	return e.system(ctx, n.SessionID, func(ctx context.Context, t *turnState) error {
		if n.Action == NudgeExpire {
			return t.expire(ctx, n)
		}
		return t.remind(ctx, n, scheduledAt)
	})
}

func (t *turnState) remind(ctx context.Context, n Nudge, scheduledAt time.Time) error {
	e := t.e
	now := e.d.Now()
	planID, waiting := pendingKey(t.sess)
	if !waiting || planID != n.PlanID {
		return nil // decided meanwhile
	}
	snooze := "/plan nudge snooze 2h"
	if planID != "" {
		p, ok, err := t.currentPlan(ctx)
		if err != nil || !ok {
			return err
		}
		r := e.planReply(t.sess, p)
		r.Kind = ReplyNudge
		r.Attachments = nil
		r.Text = fmt.Sprintf("Plan v%d %q has waited %s for a decision. /plan accept · /plan revise <feedback> · %s",
			p.Version, p.Body.Title, humanDuration(now.Sub(p.CreatedAt)), snooze)
		if _, err := e.send(ctx, r); err != nil {
			return err
		}
		return t.record(ctx, t.event(EventNudged, "system", &p, "scheduled "+scheduledAt.UTC().Format(time.RFC3339)))
	}
	q := t.sess.Question
	r := Reply{To: t.to(), Kind: ReplyNudge,
		Text: fmt.Sprintf("A question has waited %s for an answer: %s — %s. /plan answer <number or text> · %s",
			humanDuration(now.Sub(q.AskedAt)), q.Text, optionList(q.Options), snooze)}
	for _, o := range q.Options {
		r.Buttons = append(r.Buttons, Button{Label: o, Action: Action{Kind: ActionAnswer, ApprovalID: q.ID, Value: o}})
	}
	if _, err := e.send(ctx, r); err != nil {
		return err
	}
	return t.record(ctx, t.event(EventNudged, "system", nil, "question; scheduled "+scheduledAt.UTC().Format(time.RFC3339)))
}

// expire applies plan_mode.approval_timeout to the plan the schedule was made for.
func (t *turnState) expire(ctx context.Context, n Nudge) error {
	if t.sess.Phase != PhaseAwaitingApproval || t.sess.PlanID != n.PlanID {
		return nil // decided meanwhile
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigExpire)
	if !ok {
		return nil
	}
	p, ok, err := t.currentPlan(ctx)
	if err != nil || !ok {
		return err
	}
	now := t.e.d.Now()
	p.Status = PlanExpired
	p.UpdatedAt = now
	p.Decision = &Decision{By: "system", At: now, Channel: t.sess.Address.Channel, Outcome: "expired"}
	next := t.sess
	next.Phase = to
	next.ApprovalID = ""
	ch := Change{Plans: []Plan{p}, Events: []Event{t.event(EventExpired, "system", &p, "approval timeout "+n.Spec)}, CancelNudges: true}
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	t.e.refreshFile(ctx, t.sess, p)
	t.e.nudgesChanged(ctx, t.sess.ID)
	t.e.announceDecision(ctx, t.sess, p, "expired without a decision")
	t.e.notice(ctx, t.to(), fmt.Sprintf("Plan v%d %q expired: no decision within %s (plan_mode.approval_timeout). Back to planning: ask me to propose it again, or /plan off.",
		p.Version, p.Body.Title, humanDuration(t.e.cfg.ApprovalTimeout)))
	return nil
}

// ReportMissed tells a session, once, which reminders were due while plangate was down and
// are too late to deliver.
func (e *Engine) ReportMissed(ctx context.Context, sessionID string, missed []MissedNudge) error {
	if len(missed) == 0 {
		return nil
	}
	return e.system(ctx, sessionID, func(ctx context.Context, t *turnState) error {
		times := make([]string, 0, len(missed))
		for _, m := range missed {
			times = append(times, clock(m.ScheduledAt))
		}
		text := fmt.Sprintf("While plangate was down, %d %s missed (due %s).", len(missed),
			plural(len(missed), "reminder was", "reminders were"), strings.Join(times, ", "))
		if planID, waiting := pendingKey(t.sess); waiting {
			if planID != "" {
				if p, ok, err := t.currentPlan(ctx); err == nil && ok {
					text += fmt.Sprintf(" Plan v%d %q is still waiting: /plan accept · /plan revise <feedback>", p.Version, p.Body.Title)
				}
			} else {
				text += " A question is still waiting: /plan status shows it."
			}
		}
		_, err := t.e.send(ctx, Reply{To: t.to(), Kind: ReplyNudge, Text: text})
		return err
	})
}

// clock formats a time for chat replies: date and time of day in UTC.
func clock(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04 MST")
}

// humanDuration renders a duration the way a person would say it: "45 s", "30 min",
// "2 h", "1 h 30 min", "3 d".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%d h %d min", h, m)
		}
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d d", int(d.Hours())/24)
}
