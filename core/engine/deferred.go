package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A person's text for the agent (a plain message, the goal of /plan on) enters the
// transcript only under the session's lease, so the transcript is in the order the turns
// saw it: an answer follows the text its model call saw. A process that finds the lease
// held queues the text on the session row instead (InjectMessage); the holder's next turn
// takes it in after the answer it was giving (see underLease).
//
// A plain message is not committed on its own when the adapter replays the event until it
// is handled (Message.Replays): its inbound key, transcript entry and session row ride in
// the turn's first commit, so a message answered without a tool call is one transaction
// instead of two. A turn that calls a tool commits the message before the tool acts. A
// process killed before that commit stored nothing, and the replayed event is handled
// afresh.

// forAgent reports whether o carries a person's text for the agent and starts a turn.
func forAgent(o machine.Outcome) bool {
	if o.Change.Session == nil || !slices.ContainsFunc(o.Effects, func(e machine.Effect) bool { return e.Kind == machine.EffRunTurn }) {
		return false
	}
	return slices.ContainsFunc(o.Change.Messages, func(m core.ChatMessage) bool { return m.Role == core.RoleUser })
}

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

// applyForAgent applies o (see forAgent) under the session's lease: deferred (held back
// for the turn's first commit) when it may be, else committed and carried out. When
// another process holds the lease, o is applied with its text queued for that process.
func (t *jobRun) applyForAgent(ctx context.Context, o machine.Outcome) error {
	ran := false
	err := t.underLease(ctx, func(ctx context.Context) error {
		ran = true
		if !t.deferrable(o) {
			return t.apply(ctx, o)
		}
		ch := o.Change
		t.deferred = &ch
		t.sess = *ch.Session // as it will be stored; its Version is the stored row's
		err := t.leasedTurns(ctx)
		if t.deferred == nil {
			return err
		}
		// The turn ended before any commit (none before a tool acted: commitDeferred).
		cerr := t.commitDeferred(context.WithoutCancel(ctx))
		switch {
		case !errors.Is(err, core.ErrConflict) || ctx.Err() != nil:
			return cmp.Or(err, cerr)
		case cerr == nil:
			// Its commit lost to a change made after the row was read, before the lease
			// was taken (another process's turn, which may have answered what this one
			// saw queued): nothing of that turn was stored or said (flushWith). The
			// message is stored now, on the row as it is, and its turn runs on that row.
			return t.leasedTurns(ctx)
		case errors.Is(cerr, core.ErrConflict):
			return errRequeue // nothing of the message is stored: it is handled again
		}
		return cerr
	})
	if !ran && errors.Is(err, errLeaseHeld) {
		// Its turn tries the lease once more: the holder may have let go and looked already.
		err = t.apply(ctx, queued(o))
		if errors.Is(err, core.ErrConflict) {
			// The holder committed meanwhile; nothing of this message is stored, so it is
			// handled again on the row as it is now.
			return errRequeue
		}
	}
	return err
}

// errRequeue is a message of which nothing was stored because its commit lost a race: one
// queued for the lease holder, or one held back for its turn's first commit that lost to
// a change no rebase puts it on (a decision). runMessage handles it again from the start.
var errRequeue = fmt.Errorf("queuing a message for the session's lease holder: %w", core.ErrConflict)

// queued is o with its transcript entries queued on the session row for the process
// holding the lease (InjectMessage), in the order they came.
func queued(o machine.Outcome) machine.Outcome {
	next := *o.Change.Session
	next.Injections = slices.Clone(next.Injections)
	for _, m := range o.Change.Messages {
		next.Injections = append(next.Injections, core.Injection{Kind: core.InjectMessage, Text: m.Content, Name: m.Name})
	}
	o.Change.Session, o.Change.Messages = &next, nil
	return o
}

// commitDeferred commits the held-back message on its own, rebased like a flush (see
// rebase) onto a row another process changed only by queuing work.
func (t *jobRun) commitDeferred(ctx context.Context) error {
	d := t.deferred
	if d == nil {
		return nil
	}
	t.deferred = nil
	err := t.commit(ctx, *d)
	if errors.Is(err, core.ErrConflict) { // a message queued meanwhile, as in flush
		if rebased, ok := t.rebase(ctx, 0); ok {
			d.Session = &rebased
			err = t.commit(ctx, *d)
		}
	}
	return err
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
