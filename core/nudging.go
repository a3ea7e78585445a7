package core

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// nudgeLine is the "next nudge" part of /plan status from the session's schedules ns
// (known is false when they could not be read).
func nudgeLine(s Session, ns []Nudge, known bool, now time.Time) string {
	if !known {
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
		line = fmt.Sprintf("next nudge: %s (in %s)", Clock(remind.NextFireAt), HumanDuration(remind.NextFireAt.Sub(now)))
	}
	if s.NudgeSpec == NudgeOff {
		line += " · reminders off"
	} else if s.NudgeSpec != "" {
		line += " · reminders " + DescribeSpec(s.NudgeSpec)
	}
	if expire != nil {
		line += fmt.Sprintf(" · expires %s", Clock(expire.NextFireAt))
	}
	return line
}

// Nudge delivers one occurrence of a schedule that the scheduler has already recorded in
// the firing ledger. It runs in the session's queue, so a nudge that falls due during an
// agent turn arrives after that turn, and it is a system message: it never reaches the
// model as user input. A nudge whose decision was made meanwhile is dropped.
func (e *Engine) Nudge(ctx context.Context, n Nudge, scheduledAt time.Time) error {
	return e.system(ctx, n.SessionID, func(ctx context.Context, t *jobRun) error {
		cur, err := t.currentPlan(ctx)
		if err != nil {
			return err
		}
		if n.Action == NudgeExpire {
			in := Input{Now: e.d.Now(), Actor: SystemActor, Rules: e.rules(), PlanID: n.PlanID, Spec: n.Spec}
			o, err := Apply(t.sess, cur, TrigExpire, in)
			if err != nil {
				return err
			}
			return t.apply(ctx, o)
		}
		r, ev, ok := reminder(t.sess, cur, n, scheduledAt, e.d.Now())
		// Delivered first, audited after: the audit says a person was reminded.
		if err := t.deliverReminder(ctx, n, scheduledAt, r, ok); err != nil || !ok {
			return err // !ok: decided meanwhile
		}
		e.obs.obs.Nudge("fired")
		return t.commit(ctx, Change{SessionID: t.sess.ID, Events: []Event{ev}})
	})
}

// reminder is the reminder for schedule n, and its audit row; ok is false when what it
// was made for is no longer waiting.
func reminder(s Session, cur *Plan, n Nudge, scheduledAt, now time.Time) (Reply, Event, bool) {
	planID, waiting := PendingKey(s)
	if !waiting || planID != n.PlanID || (planID != "" && cur == nil) {
		return Reply{}, Event{}, false
	}
	ev := Event{SessionID: s.ID, Kind: EventNudged, Actor: SystemActor, Channel: s.Address.Channel, At: now}
	const snooze = "/plan nudge snooze 2h"
	if planID != "" {
		p := *cur
		r := PlanReply(s, p)
		r.Kind = ReplyNudge
		r.Attachments = nil
		r.Text = fmt.Sprintf("%s has waited %s for a decision. /plan accept · /plan revise <feedback> · %s",
			PlanLabel(p), HumanDuration(now.Sub(p.CreatedAt)), snooze)
		ev.PlanID, ev.PlanVersion = p.ID, p.Version
		ev.Detail = "scheduled " + scheduledAt.UTC().Format(time.RFC3339)
		return r, ev, true
	}
	q := s.Question
	r := Reply{To: s.Address, Kind: ReplyNudge,
		Text: fmt.Sprintf("A question has waited %s for an answer: %s — %s. /plan answer <number or text> · %s",
			HumanDuration(now.Sub(q.AskedAt)), q.Text, OptionList(q.Options), snooze)}
	for _, o := range q.Options {
		r.Buttons = append(r.Buttons, Button{Label: o, Action: Action{Kind: ActionAnswer, ApprovalID: q.ID, Value: o}})
	}
	ev.Detail = "question; scheduled " + scheduledAt.UTC().Format(time.RFC3339)
	return r, ev, true
}

// ReportMissed tells a session, once, which reminders were due while plangate was down and
// are too late to deliver.
func (e *Engine) ReportMissed(ctx context.Context, sessionID string, missed []MissedNudge) error {
	if len(missed) == 0 {
		return nil
	}
	for range missed {
		e.obs.obs.Nudge("missed")
	}
	return e.system(ctx, sessionID, func(ctx context.Context, t *jobRun) error {
		cur, err := t.currentPlan(ctx)
		if err != nil {
			cur = nil // the report is still worth sending
		}
		return t.post(ctx, Reply{Kind: ReplyNudge, Text: missedText(t.sess, cur, missed)})
	})
}

func missedText(s Session, cur *Plan, missed []MissedNudge) string {
	times := make([]string, 0, len(missed))
	for _, m := range missed {
		times = append(times, Clock(m.ScheduledAt))
	}
	text := fmt.Sprintf("While plangate was down, %d %s missed (due %s).", len(missed),
		Plural(len(missed), "reminder was", "reminders were"), strings.Join(times, ", "))
	if planID, waiting := PendingKey(s); waiting {
		if planID == "" {
			text += " A question is still waiting: /plan status shows it."
		} else if cur != nil {
			text += fmt.Sprintf(" %s is still waiting: /plan accept · /plan revise <feedback>", PlanLabel(*cur))
		}
	}
	return text
}
