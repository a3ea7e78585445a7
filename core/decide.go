package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/plangate/plangate/commands"
)

// turnState is the state of one job: the session as last committed and transcript
// entries that ride along with the next commit.
type turnState struct {
	e       *Engine
	j       *job
	sess    Session
	pending []ChatMessage
	// gateNoticed: the chat was already told about a blocked mutation in this job.
	gateNoticed bool
}

// commit stores next as the session's new state together with ch, the transcript
// entries gathered so far and the job's inbound key. Only on success does t.sess
// become next.
func (t *turnState) commit(ctx context.Context, next Session, ch Change) error {
	next.UpdatedAt = t.e.d.Now()
	ch.Session = &next
	ch.SessionID = next.ID
	ch.Messages = append(t.pending, ch.Messages...)
	if t.j.inbound != nil {
		ch.Inbound = t.j.inbound
	}
	stored, err := t.e.d.Store.Commit(ctx, ch)
	if err != nil {
		return fmt.Errorf("committing session %s: %w", next.ID, err)
	}
	t.j.inbound = nil
	t.pending = nil
	next.Version = stored.Version
	t.sess = next
	return nil
}

// record appends audit rows (and pending transcript entries) without touching the session
// row, so a refusal leaves the session exactly as it was. A session that is not stored yet
// has nothing to audit.
func (t *turnState) record(ctx context.Context, events ...Event) error {
	if t.sess.Version == 0 {
		return nil
	}
	ch := Change{SessionID: t.sess.ID, Events: events, Messages: t.pending, Inbound: t.j.inbound}
	if _, err := t.e.d.Store.Commit(ctx, ch); err != nil {
		return fmt.Errorf("recording events for %s: %w", t.sess.ID, err)
	}
	t.j.inbound = nil
	t.pending = nil
	return nil
}

func (t *turnState) msg() Message { return t.j.msg }

// event builds an audit row for the current session; plan may be nil.
func (t *turnState) event(kind EventKind, actor string, plan *Plan, detail string) Event {
	ev := Event{SessionID: t.sess.ID, Kind: kind, Actor: actor, Channel: t.sess.Address.Channel, Detail: detail, At: t.e.d.Now()}
	if plan != nil {
		ev.PlanID = plan.ID
		ev.PlanVersion = plan.Version
	}
	return ev
}

func (t *turnState) person() string { return t.msg().Sender.ID }

func (t *turnState) personName() string {
	if n := t.msg().Sender.Name; n != "" {
		return n
	}
	return t.msg().Sender.ID
}

func (t *turnState) to() Address { return t.sess.Address }

func (t *turnState) notice(ctx context.Context, format string, args ...any) {
	t.e.notice(ctx, t.to(), fmt.Sprintf(format, args...))
}

// dispatch routes the job's message: a button, a /plan command, or text for the agent.
func (t *turnState) dispatch(ctx context.Context) error {
	m := t.msg()
	if m.Action != nil {
		return t.onAction(ctx, *m.Action)
	}
	r := commands.Parse(m.Text, "")
	switch r.Kind {
	case commands.IsUsage:
		t.notice(ctx, "%s", r.Reply)
		return nil
	case commands.IsCommand:
		return t.onCommand(ctx, r.Cmd)
	}
	return t.onText(ctx)
}

func (t *turnState) onCommand(ctx context.Context, c commands.Command) error {
	if !t.e.mayDecide(c.Spec.Who, t.sess, t.msg()) {
		return t.refuseUnauthorized(ctx, string(c.Name))
	}
	switch c.Name {
	case commands.Status:
		t.e.reply(ctx, t.to(), t.statusText(ctx))
		return nil
	case commands.Help:
		t.e.reply(ctx, t.to(), commands.HelpText())
		return nil
	case commands.Show:
		return t.show(ctx)
	case commands.On:
		return t.planOn(ctx, c.Args)
	case commands.Off:
		return t.planOff(ctx)
	case commands.Accept:
		return t.accept(ctx, "", c.Version)
	case commands.Revise:
		return t.revise(ctx, "", c.Args)
	case commands.Answer:
		return t.answer(ctx, c.Args)
	case commands.Auto:
		return t.auto(ctx, c.Auto == commands.AutoOn, "")
	case commands.Nudge:
		return t.setNudge(ctx, c.Nudge)
	}
	return fmt.Errorf("unhandled command %q", c.Name)
}

func (t *turnState) onAction(ctx context.Context, a Action) error {
	who := commands.Approver
	if a.Kind == ActionAnswer {
		who = commands.ApproverOrOwner
	}
	if !t.e.mayDecide(who, t.sess, t.msg()) {
		return t.refuseUnauthorized(ctx, string(a.Kind))
	}
	switch a.Kind {
	case ActionAccept:
		return t.accept(ctx, a.ApprovalID, 0)
	case ActionRevise:
		if strings.TrimSpace(a.Value) == "" {
			t.notice(ctx, "What should change? Reply with /plan revise <feedback>.")
			return nil
		}
		return t.revise(ctx, a.ApprovalID, a.Value)
	case ActionAuto:
		return t.auto(ctx, true, a.ApprovalID)
	case ActionAnswer:
		if q := t.sess.Question; a.ApprovalID != "" && (q == nil || q.ID != a.ApprovalID) {
			t.notice(ctx, "That question was already answered or replaced; nothing changed. /plan status shows what is waiting.")
			return nil
		}
		return t.answer(ctx, a.Value)
	}
	t.notice(ctx, "That button is not one plangate knows; nothing changed.")
	return nil
}

func (t *turnState) refuseUnauthorized(ctx context.Context, what string) error {
	name := t.personName()
	verb := "decide on plans"
	if what == string(commands.Answer) {
		verb = "answer questions"
	}
	if len(t.e.cfg.Approvers) > 0 {
		t.notice(ctx, "Only approvers can %s here (%s is not one).", verb, name)
	} else {
		t.notice(ctx, "Only %s, who started this conversation, can %s here.", t.sess.Owner, verb)
	}
	return t.record(ctx, t.event(EventRefused, t.person(), nil, fmt.Sprintf("%s by %s: not authorized", what, name)))
}

// currentPlan loads the session's current plan; ok is false if there is none.
func (t *turnState) currentPlan(ctx context.Context) (Plan, bool, error) {
	if t.sess.PlanID == "" {
		return Plan{}, false, nil
	}
	p, err := t.e.d.Store.Plan(ctx, t.sess.PlanID)
	if errors.Is(err, ErrNotFound) {
		return Plan{}, false, nil
	}
	if err != nil {
		return Plan{}, false, fmt.Errorf("loading plan %s: %w", t.sess.PlanID, err)
	}
	return p, true, nil
}

// refusePhase answers a command that the current phase does not allow.
func (t *turnState) refusePhase(ctx context.Context, what string) error {
	p, ok, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	switch t.sess.Phase {
	case PhaseOff:
		t.notice(ctx, "There is no plan to %s (phase: off). Start one with /plan on <goal>.", what)
	case PhasePlanning:
		t.notice(ctx, "There is no plan to %s yet (phase: planning): I'm still working on one. /plan status shows where things stand.", what)
	case PhaseExecuting:
		if ok {
			t.notice(ctx, "Plan v%d %q is already accepted and being carried out (phase: executing). To change course: /plan revise <feedback>.", p.Version, p.Body.Title)
		} else {
			t.notice(ctx, "Nothing to %s (phase: executing).", what)
		}
	case PhaseAwaitingApproval:
		t.notice(ctx, "Plan v%d %q is waiting for a decision (phase: awaiting_approval): /plan accept · /plan revise <feedback>.", p.Version, p.Body.Title)
	}
	return nil
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
