package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// A person's message whose handling fails because the store is out (core.OutageTeller:
// unreachable, restarting, out of disk; or a turn stopped because its lease could not be
// renewed in time) is not given up: it stays at the head of its session's queue, so the
// session's later messages wait behind it, and is handled again after a wait that doubles
// from outageFirstWait up to outageMaxWait, until it goes through or the engine's work
// ends (a shutdown: the job reports the context's error, and the adapter keeps the event
// in its inbox for the next start). Only then is its outcome reported (EnqueueThen's
// then), so an adapter retires the event from its inbox only once it was handled. The
// chat is told once that its message is delayed, sent directly (the outbox is in the
// store that is out); a later message of the same session delayed by the same outage is
// not told again. The admin API's changes are not kept: the operator is answered at once.
// The waits are core/backoff's, without jitter (one waiter per session, and the store's
// own pool bounds the load of many); the engine's clock is injected (Deps.After) so that
// tests step it.

const (
	outageFirstWait = time.Second
	outageMaxWait   = 30 * time.Second
)

// DelayNotice is what a chat is told, once, when its message waits for the store.
const DelayNotice = "I can't reach my database right now; I'll handle your message as soon as it's back. No need to send it again."

// kept reports whether j is kept through a store outage: a person's message from a chat.
func (j *job) kept() bool { return j.sys == nil && !j.msg.Sender.Admin && !j.msg.Sender.IsBot }

// outage reports whether err, from handling j, is the store's outage rather than an answer
// about the message, while j's work may go on: the job is then handled again later.
func (e *Engine) outage(j *job, err error) bool {
	if err == nil || !j.kept() || j.ctx.Err() != nil {
		return false
	}
	if ot, ok := e.d.Store.(core.OutageTeller); ok && ot.Outage(err) {
		return true
	}
	// A store call's deadline, or a turn stopped because its lease's renewal did not go
	// through before the lease ended: the job's own context is alive.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// runKept handles a person's message, again and again while the store is out.
func (e *Engine) runKept(j *job) error {
	inbound, waits := j.inbound, backoff.New(outageFirstWait, outageMaxWait)
	sid := j.msg.Address.SessionID()
	for {
		err := e.runMessage(j)
		if !e.outage(j, err) {
			if j.retried && j.ctx.Err() == nil { // only a job that waited set the flag
				e.outageOver(sid)
			}
			return err
		}
		wait := waits.NextBackOff()
		e.d.Log.Warn("the store is out; keeping the message and handling it again", "session", sid, "in", wait, "err", err)
		e.tellDelayed(j)
		select {
		case <-j.ctx.Done():
			return fmt.Errorf("waiting for the store to handle a message of %s: %w", sid, j.ctx.Err())
		case <-e.d.After(wait):
		}
		j.inbound, j.retried, j.outcome = inbound, true, ""
	}
}

// tellDelayed tells j's chat that its message waits for the store, unless it was told
// during this outage already.
func (e *Engine) tellDelayed(j *job) {
	sid := j.msg.Address.SessionID()
	e.mu.Lock()
	told := e.delayed[sid]
	e.delayed[sid] = true
	e.mu.Unlock()
	if told {
		return
	}
	t := &jobRun{e: e, j: j, sess: core.Session{ID: sid, Address: j.msg.Address}}
	_, _ = t.send(j.ctx, noticef("%s", DelayNotice))
}

// outageOver forgets that sid's chat was told of a delay: a message of it went through.
func (e *Engine) outageOver(sid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.delayed, sid)
}

// carryOn finishes a kept message whose earlier attempt committed it before the store went
// out (its event is recorded): the work it started gets its turn, as a restart's Resume
// would give it (see resumeWork); a session whose turn another process runs is left to it.
func (e *Engine) carryOn(ctx context.Context, j *job) error {
	id := j.msg.Address.SessionID()
	sess, err := e.d.Store.Session(ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loading session %s: %w", id, err)
	}
	t := &jobRun{e: e, j: j, sess: sess}
	err = t.underLease(ctx, func(ctx context.Context) error { return t.resumeWork(ctx, false, false) })
	if errors.Is(err, errLeaseHeld) {
		return nil
	}
	return err
}
