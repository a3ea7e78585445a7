package engine

import (
	"context"
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The applier: the one way an Outcome takes effect, for person commands, the clock and
// the agent's plan tools alike. It writes new plan files, commits the Change in one
// transaction (its replies as outbox rows), then runs the effects in order.

// applyInbound applies the outcome of a person's message. The job's inbound key is
// recorded with it, so a redelivered event is recognised; it is the only commit that
// carries the key.
func (t *jobRun) applyInbound(ctx context.Context, o machine.Outcome) error {
	if t.j.inbound != nil && (!changeEmpty(o.Change) || len(o.Effects) > 0) {
		// A reply with no transition of its own still records the event, lazily, with its
		// outbox row: a replay is then not answered twice. A plain message stays lazy as
		// ApplyMessage made it: overwriting that would fsync every message for the agent.
		o.Change.Lazy = o.Change.Lazy || changeEmpty(o.Change)
		o.Change.Inbound = t.j.inbound
		t.j.inbound = nil
	}
	if forAgent(o) {
		return t.applyForAgent(ctx, o)
	}
	return t.apply(ctx, o)
}

// apply writes, commits and carries out o.
func (t *jobRun) apply(ctx context.Context, o machine.Outcome) error {
	if err := t.prepare(o); err != nil {
		return err
	}
	if !changeEmpty(o.Change) {
		t.queueReplies(ctx, &o)
	}
	if err := t.commit(ctx, o.Change); err != nil {
		return err
	}
	return t.carryOut(ctx, o)
}

// prepare writes the files of new plan versions before the commit: a stored plan must
// not point at a file that was never written. A failure stops the transition.
func (t *jobRun) prepare(o machine.Outcome) error {
	for _, eff := range o.Effects {
		if eff.Kind != machine.EffWriteFile {
			continue
		}
		if _, err := t.e.files.write(o.Session, eff.Plan); err != nil {
			t.e.d.Log.Error("writing plan file", "session", o.Session.ID, "err", err)
			return fmt.Errorf("writing plan file: %w", err)
		}
	}
	return nil
}

func changeEmpty(ch core.Change) bool {
	return ch.Session == nil && len(ch.Events) == 0 && len(ch.Plans) == 0 && len(ch.Messages) == 0 &&
		len(ch.Nudges) == 0 && !ch.CancelNudges && !ch.CancelReminders && ch.Inbound == nil && len(ch.Outbox) == 0
}

// commit stores ch; when it carries the session, t.sess becomes the stored session.
func (t *jobRun) commit(ctx context.Context, ch core.Change) error {
	if t.deferred != nil {
		ch = t.withDeferred(ch) // the turn's first commit carries the message (deferred.go)
	}
	unstop := t.unstop
	if unstop != nil && !changeEmpty(ch) {
		ch = t.withUnstop(ch) // and the cleared stop of the plan it goes on with (clearStop)
	} else {
		unstop = nil
	}
	if changeEmpty(ch) {
		return nil
	}
	own := ch.Session != nil && ch.Session.ID == t.sess.ID
	if own {
		ch = t.withTokens(ch) // the job's model calls, with the step that stores their answers
	}
	if ch.SessionID == "" {
		ch.SessionID = t.sess.ID
	}
	stored, err := t.e.d.Store.Commit(ctx, ch)
	if err != nil {
		t.e.windows.drop(ch.SessionID) // a conflict: another writer moved the transcript
		return fmt.Errorf("committing session %s: %w", t.sess.ID, err)
	}
	t.deferred = nil
	t.unstop = nil
	if own {
		t.tokens = plan.Tokens{}
	}
	if unstop != nil {
		was := t.unstopWas
		t.cleared = &was
		for _, p := range ch.Plans {
			if p.ID == unstop.ID && p.Run.Stop == nil {
				t.showPlan(p)
			}
		}
	}
	t.j.stored = true
	t.observeCommit(ctx, ch)
	switch {
	case ch.Session != nil:
		t.e.windows.committed(ch.SessionID, ch.Session.Version, stored.Version, ch.Messages, t.e.cfg.HistoryMessages, t.e.d.Now())
	case len(ch.Messages) > 0:
		t.e.windows.drop(ch.SessionID) // entries without a new row version: not tracked
	}
	if ch.Session != nil {
		next := *ch.Session
		next.Version = stored.Version
		t.sess = next
	}
	return nil
}

// carryOut runs the effects of a committed outcome. Delivery failures are logged (and,
// where the outcome says so, answered with a notice); only an agent turn can fail it.
func (t *jobRun) carryOut(ctx context.Context, o machine.Outcome) error {
	e := t.e
	for _, eff := range o.Effects {
		if st := eff.Plan.Run.Stop; st != nil && t.cleared != nil && *st == *t.cleared {
			eff.Plan.Run.Stop = nil // computed before the commit that cleared it
		}
		switch eff.Kind {
		case machine.EffWriteFile:
			// done by prepare
		case machine.EffRefreshFile:
			e.files.refresh(t.sess, eff.Plan)
		case machine.EffWorkspaceCopy:
			// Now, not in the background: the agent's next call may read it.
			e.copyPlan(t.sess, t.withStoredTokens(ctx, eff.Plan))
		case machine.EffNudgesChanged:
			if e.d.Nudger != nil {
				e.d.Nudger.SessionChanged(ctx, t.sess.ID)
			}
		case machine.EffRetire, machine.EffApprovals:
			_, _ = t.sendEffect(ctx, o, eff)
		case machine.EffProgress:
			t.postProgress(ctx, o, eff)
		case machine.EffForget:
			e.progress.forget(ctx, eff.Plan.ID)
		case machine.EffSay:
			if _, err := t.sendEffect(ctx, o, eff); err != nil {
				t.onFail(ctx, eff, &o, err)
			}
		case machine.EffReport:
			t.postReport(ctx, t.withStoredTokens(ctx, eff.Plan))
		case machine.EffRunTurn:
			if err := t.runTurns(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendEffect delivers the reply of eff: its committed outbox row when it has one.
func (t *jobRun) sendEffect(ctx context.Context, o machine.Outcome, eff machine.Effect) (string, error) {
	if eff.Row > 0 {
		return t.e.deliver(ctx, &o.Change.Outbox[eff.Row-1])
	}
	return t.send(ctx, eff.Reply)
}

// send delivers a reply to the session, as the answer to the job's inbound event.
// A delivery failure is logged and returned, never taken as a decision.
func (t *jobRun) send(ctx context.Context, r core.Reply) (string, error) {
	return t.e.send(ctx, t.address(r))
}

// notice tells the session what went wrong (or what a turn could not do), through the
// outbox like every other reply (see post).
func (t *jobRun) notice(ctx context.Context, format string, args ...any) {
	_ = t.post(ctx, noticef(format, args...))
}

// postProgress sends the checklist, editing the plan's earlier checklist message in place
// where the channel can.
func (t *jobRun) postProgress(ctx context.Context, o machine.Outcome, eff machine.Effect) {
	if eff.Row == 0 {
		eff.Reply.ReplaceID = t.e.progress.get(ctx, eff.Plan.ID)
	}
	id, err := t.sendEffect(ctx, o, eff)
	if err != nil {
		return
	}
	if id != "" {
		t.e.progress.set(ctx, eff.Plan.ID, id)
	}
}
