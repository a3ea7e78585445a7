package engine

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// nudgeLine is the "next nudge" part of /plan status from the session's schedules ns
// (known is false when they could not be read).
func nudgeLine(s core.Session, ns []core.Nudge, known bool, now time.Time) string {
	if !known {
		return "next nudge: unknown"
	}
	var remind, expire *core.Nudge
	for i := range ns {
		n := &ns[i]
		if n.Status != core.NudgeActive || n.NextFireAt.IsZero() {
			continue
		}
		switch {
		case n.Action == core.NudgeRemind && (remind == nil || n.NextFireAt.Before(remind.NextFireAt)):
			remind = n
		case n.Action == core.NudgeExpire && (expire == nil || n.NextFireAt.Before(expire.NextFireAt)):
			expire = n
		}
	}
	line := "next nudge: none"
	if remind != nil {
		line = fmt.Sprintf("next nudge: %s (in %s)", core.Clock(remind.NextFireAt), core.HumanDuration(remind.NextFireAt.Sub(now)))
	}
	if s.NudgeSpec == core.NudgeOff {
		line += " · reminders off"
	} else if s.NudgeSpec != "" {
		line += " · reminders " + machine.DescribeSpec(s.NudgeSpec)
	}
	if expire != nil {
		line += fmt.Sprintf(" · expires %s", core.Clock(expire.NextFireAt))
	}
	return line
}

// Nudge delivers one occurrence of a schedule the scheduler has recorded in the firing
// ledger, in the session's queue (after a running turn), as a system message that never
// reaches the model. A nudge whose decision was made meanwhile is dropped.
func (e *Engine) Nudge(ctx context.Context, n core.Nudge, scheduledAt time.Time) error {
	return e.system(ctx, n.SessionID, func(ctx context.Context, t *jobRun) error {
		cur, err := t.currentPlan(ctx)
		if err != nil {
			return err
		}
		if n.Action == core.NudgeExpire {
			in := machine.Input{Now: e.d.Now(), Actor: core.SystemActor, Rules: e.rules(), PlanID: n.PlanID, Spec: n.Spec}
			o, err := machine.Apply(t.sess, cur, machine.TrigExpire, in)
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
		ch := core.Change{SessionID: t.sess.ID, Events: []core.Event{ev}}
		if p, rs, ok := t.escalation(ctx, cur, n); ok {
			ch.Events = append(ch.Events, core.Event{SessionID: t.sess.ID, Kind: core.EventEscalated, Actor: core.SystemActor,
				Channel: t.sess.Address.Channel, PlanID: p.ID, PlanVersion: p.Version, At: p.Run.Escalated.At,
				Detail: "told " + strings.Join(p.Run.Escalated.To, ", ")})
			ch.Plans = []core.Plan{p}
			return t.commitSaying(ctx, ch, rs...)
		}
		return t.commit(ctx, ch)
	})
}

// reminder is the reminder for schedule n, and its audit row; ok is false when what it
// was made for is no longer waiting.
func reminder(s core.Session, cur *core.Plan, n core.Nudge, scheduledAt, now time.Time) (core.Reply, core.Event, bool) {
	planID, waiting := machine.PendingKey(s)
	if !waiting || planID != n.PlanID || (planID != "" && cur == nil) {
		return core.Reply{}, core.Event{}, false
	}
	ev := core.Event{SessionID: s.ID, Kind: core.EventNudged, Actor: core.SystemActor, Channel: s.Address.Channel, At: now}
	const snooze = "/plan nudge snooze 2h"
	if planID != "" {
		p := *cur
		r := machine.PlanReply(s, p)
		r.Kind = core.ReplyNudge
		r.Attachments = nil
		r.Text = fmt.Sprintf("%s has waited %s for a decision. /plan accept · /plan revise <feedback> · %s", machine.PlanLabel(p), core.HumanDuration(now.Sub(p.CreatedAt)), snooze)
		ev.PlanID, ev.PlanVersion = p.ID, p.Version
		ev.Detail = "scheduled " + scheduledAt.UTC().Format(time.RFC3339)
		return r, ev, true
	}
	q := s.Question
	r := core.Reply{To: s.Address, Kind: core.ReplyNudge,
		Text: fmt.Sprintf("A question has waited %s for an answer: %s — %s. /plan answer <number or text> · %s", core.HumanDuration(now.Sub(q.AskedAt)), q.Text, machine.OptionList(q.Options), snooze)}
	for _, o := range q.Options {
		r.Buttons = append(r.Buttons, core.Button{Label: o, Action: core.Action{Kind: core.ActionAnswer, ApprovalID: q.ID, Value: o}})
	}
	ev.Detail = "question; scheduled " + scheduledAt.UTC().Format(time.RFC3339)
	return r, ev, true
}

// ReportMissed tells a session, once, which reminders were due while plangate was down and
// are too late to deliver.
func (e *Engine) ReportMissed(ctx context.Context, sessionID string, missed []core.MissedNudge) error {
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
		return t.post(ctx, core.Reply{Kind: core.ReplyNudge, Text: missedText(t.sess, cur, missed)})
	})
}

func missedText(s core.Session, cur *core.Plan, missed []core.MissedNudge) string {
	times := make([]string, 0, len(missed))
	for _, m := range missed {
		times = append(times, core.Clock(m.ScheduledAt))
	}
	text := fmt.Sprintf("While plangate was down, %d %s missed (due %s).", len(missed), machine.Plural(len(missed), "reminder was", "reminders were"), strings.Join(times, ", "))
	if planID, waiting := machine.PendingKey(s); waiting {
		if planID == "" {
			text += " A question is still waiting: /plan status shows it."
		} else if cur != nil {
			text += fmt.Sprintf(" %s is still waiting: /plan accept · /plan revise <feedback>", machine.PlanLabel(*cur))
		}
	}
	return text
}

// Reminders at least once: ClaimReminder commits the reminder as an outbox row in the same
// transaction as the scheduler's firing-ledger claim, and Nudge delivers that row in the
// session's queue; a process killed in between leaves it for the next start. "fired" in
// `nudges list` therefore means delivered at least once (or moot: decided meanwhile).

// reminderKey keys a claimed occurrence's row in Engine.pending until Nudge delivers it.
func reminderKey(id int64, at time.Time) string {
	return fmt.Sprintf("%d@%s", id, at.UTC().Format(time.RFC3339Nano))
}

// ClaimReminder claims occurrence scheduledAt of reminder n (advancing it to next) with the
// reminder's reply in the outbox, in one transaction; a moot reminder is claimed without a
// reply. False means the occurrence was not ours to claim.
func (e *Engine) ClaimReminder(ctx context.Context, n core.Nudge, scheduledAt, firedAt, next time.Time) (bool, error) {
	var out []core.Outgoing
	s, err := e.d.Store.Session(ctx, n.SessionID)
	if err != nil {
		return false, fmt.Errorf("claiming reminder %d: loading session: %w", n.ID, err)
	}
	t := &jobRun{e: e, j: &job{}, sess: s}
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return false, fmt.Errorf("claiming reminder %d: %w", n.ID, err)
	}
	if r, _, ok := reminder(s, cur, n, scheduledAt, e.d.Now()); ok {
		out = []core.Outgoing{t.row(t.address(r))}
	}
	claimed, err := e.d.Store.FireNudgeWith(ctx, n.ID, scheduledAt, firedAt, next, out)
	if err != nil || !claimed {
		return claimed, err
	}
	if len(out) == 1 {
		e.pending.Store(reminderKey(n.ID, scheduledAt), out[0])
	}
	return true, nil
}

// deliverReminder sends reminder r of occurrence (n, scheduledAt): its claimed outbox row
// when there is one, else directly; a row whose decision was made meanwhile is dropped.
func (t *jobRun) deliverReminder(ctx context.Context, n core.Nudge, scheduledAt time.Time, r core.Reply, ok bool) error {
	v, claimed := t.e.pending.LoadAndDelete(reminderKey(n.ID, scheduledAt))
	row, _ := v.(core.Outgoing)
	switch {
	case claimed && !ok:
		if err := t.e.d.Store.DropOutbox(ctx, row.ID, "decided before delivery"); err != nil {
			t.e.d.Log.Warn("dropping a moot reminder", "outbox", row.ID, "err", err)
		}
		return nil
	case claimed:
		_, err := t.e.deliver(ctx, &row)
		return err
	case ok:
		_, err := t.send(ctx, r)
		return err
	}
	return nil
}

// escalation is what the last reminder of a pending plan adds when nobody decided on it:
// the plan with Run.Escalated set, and the notices to plan_mode.escalate_to. ok is false
// when there is nobody to tell, the plan was escalated already, or a reminder of it is
// still to come (a later one-shot or a recurring schedule).
func (t *jobRun) escalation(ctx context.Context, cur *core.Plan, n core.Nudge) (core.Plan, []core.Reply, bool) {
	to := t.e.cfg.EscalateTo
	if len(to) == 0 || cur == nil || n.PlanID == "" || cur.ID != n.PlanID || cur.Run.Escalated != nil {
		return core.Plan{}, nil, false
	}
	ns, err := t.e.d.Store.Nudges(ctx, t.sess.ID)
	if err != nil {
		t.e.d.Log.Warn("escalation: listing reminders; not escalating now", "session", t.sess.ID, "err", err)
		return core.Plan{}, nil, false
	}
	fired := 0
	for _, o := range ns {
		if o.PlanID != n.PlanID || o.Action != core.NudgeRemind {
			continue
		}
		fired += o.Fired
		if o.ID != n.ID && o.Status == core.NudgeActive && !o.NextFireAt.IsZero() {
			return core.Plan{}, nil, false // another reminder will come
		}
	}
	fired = max(fired, 1) // the firing being delivered may not be counted yet
	now := t.e.d.Now()
	p := *cur
	esc := &plan.Escalation{At: now}
	var rs []core.Reply
	text := fmt.Sprintf("Nobody has decided on %s in %s after %s and %s (asked by %s). Decide in that chat: /plan accept · /plan revise <feedback> · /plan status.",
		machine.PlanLabel(p), t.sess.ID, core.HumanDuration(now.Sub(p.CreatedAt)), machine.Plural(fired, "1 reminder", fmt.Sprintf("%d reminders", fired)),
		requesterNames(p))
	if base := t.e.cfg.DecideURL; base != "" {
		text += " Or on the web: " + strings.TrimRight(base, "/") + "/dashboard/sessions/" + url.PathEscape(t.sess.ID)
	}
	for _, a := range to {
		esc.To = append(esc.To, a.SessionID())
		rs = append(rs, core.Reply{To: a, Kind: core.ReplyNudge, Text: text})
	}
	p.Run.Escalated, p.UpdatedAt = esc, now
	return p, rs, true
}

// requesterNames names who asked for plan p, for a notice outside its chat.
func requesterNames(p core.Plan) string {
	var names []string
	for _, r := range p.Requesters {
		names = append(names, cmp.Or(r.Name, r.By))
	}
	if len(names) == 0 {
		return "nobody recorded"
	}
	return strings.Join(names, ", ")
}
