package engine

import (
	"context"
	"errors"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A plain message for the agent is not committed on its own when the adapter replays the
// event until it is handled (Message.Replays): its inbound key, transcript entry and
// session row ride in the turn's first commit, so a message answered without a tool call
// is one transaction instead of two. A turn that calls a tool commits the message before
// the tool acts. A process killed before that commit stored nothing, and the replayed
// event is handled afresh.

// deferrable reports whether o is a plain message for the agent that may wait for the
// turn's first commit: a lazy change of the session row and user entries with the
// event's key, and nothing to do but start the turn.
func (t *jobRun) deferrable(o machine.Outcome) bool {
	ch := o.Change
	if !t.j.msg.Replays || ch.Inbound == nil || !ch.Lazy || ch.Session == nil || len(ch.Messages) == 0 ||
		len(ch.Events) > 0 || len(ch.Plans) > 0 || len(ch.Nudges) > 0 || ch.CancelNudges || ch.CancelReminders ||
		len(ch.Outbox) > 0 || len(o.Effects) != 1 || o.Effects[0].Kind != machine.EffRunTurn {
		return false
	}
	for _, m := range ch.Messages {
		if m.Role != core.RoleUser {
			return false
		}
	}
	return true
}

// applyDeferred runs the turn of deferrable o under the session's lease with o's change
// held back for the turn's first commit: under the lease, no other process can run a turn
// that would need the message. When another process holds it, the message is stored for
// that process. As in runTurns, work left meanwhile is looked for after the release.
func (t *jobRun) applyDeferred(ctx context.Context, o machine.Outcome) error {
	ran := false
	err := t.withLease(ctx, func(ctx context.Context) error {
		ran = true
		ch := o.Change
		t.deferred = &ch
		t.sess = *ch.Session // as it will be stored; its Version is the stored row's
		err := t.leasedTurns(ctx, false)
		if t.deferred != nil { // the turn ended before any commit
			if cerr := t.commitDeferred(context.WithoutCancel(ctx)); err == nil {
				err = cerr
			}
		}
		return err
	})
	if !ran && errors.Is(err, errLeaseHeld) {
		return t.apply(ctx, o)
	}
	if err != nil {
		return err
	}
	if again, err := t.moreWork(ctx); err != nil || !again {
		return err
	}
	return t.runTurns(ctx)
}

// commitDeferred commits the held-back message on its own.
func (t *jobRun) commitDeferred(ctx context.Context) error {
	d := t.deferred
	if d == nil {
		return nil
	}
	t.deferred = nil
	return t.commit(ctx, *d)
}

// withDeferred adds the held-back message to ch, the turn's first commit: its key and
// entries (first), and the session row when ch does not write it (t.sess carries the
// message's state).
func (t *jobRun) withDeferred(ch core.Change) core.Change {
	d := t.deferred
	ch.Inbound = d.Inbound
	ch.Messages = append(append([]core.ChatMessage(nil), d.Messages...), ch.Messages...)
	if ch.Session == nil {
		s := t.sess
		ch.Session = &s
	}
	ch.SessionID = d.SessionID
	return ch
}
