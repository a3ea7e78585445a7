package core

import (
	"context"
	"errors"
	"sync"
	"time"
)

// renewal keeps a turn's session lease, renewing it every ttl/3 from a timer. Most turns
// end sooner than that (a plain message takes milliseconds against a 10 s first renewal),
// so nothing runs for them at all: a goroutine waiting beside every turn cost each message
// a goroutine start and, on a mostly idle process, the wake-up of an idle P and its thread.
type renewal struct {
	e         *Engine
	ctx       context.Context // the turn's: renewals stop when it ends
	name, sid string
	lost      context.CancelFunc // stops the turn when a renewal is refused

	// mu is held for a whole renewal, store write included, so that stop waits for one
	// in flight: the lease is not written after the turn ends, and until is final then.
	mu      sync.Mutex
	until   time.Time   // the lease's expiry as last written
	cancel  func() bool // stops the pending timer
	stopped bool
}

// startRenewal schedules the first renewal of a lease taken until until. renewAfter must
// run its function later, on a goroutine of its own (as time.AfterFunc does), never from
// within the call: the renewal's mutex is held while it schedules.
func (e *Engine) startRenewal(ctx context.Context, name, sid string, until time.Time, lost context.CancelFunc) *renewal {
	r := &renewal{e: e, ctx: ctx, name: name, sid: sid, lost: lost, until: until}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel = e.renewAfter(e.leaseTTL/3, r.fire)
	return r
}

// fire renews the lease (the timer's function) and schedules the next renewal, unless the
// turn ended or the lease was lost. The next renewal is due ttl/3 after this one began,
// not after its write ended, as a ticker's would be: a slow failing write (a stalled
// database) must leave its retry before the lease it could not extend expires, so the
// write's time comes off the wait.
//
// A turn never runs past its lease's end by this process's clock: once that has come,
// another process's Resume may take the lease and run the session's turn too (its commit
// would lose the compare-and-set, but the model would be called twice and a mutating tool
// could run twice). So the write is bounded by the lease's end (write), and a failed write
// is tried again only when the lease outlasts the wait for the retry; else the turn stops.
func (r *renewal) fire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.ctx.Err() != nil {
		return
	}
	e := r.e
	began := e.d.Now()
	if r.until.Sub(began) <= 0 {
		e.d.Log.Error("the session lease ended before its renewal ran (the process stalled); stopping the turn", "session", r.sid, "until", r.until)
		r.lost()
		return
	}
	l, ok, ended, err := r.write(began)
	if ended || r.ctx.Err() != nil {
		return // the turn was stopped at the lease's end, or ended meanwhile
	}
	now := e.d.Now()
	next := max(0, e.leaseTTL/3-now.Sub(began))
	switch {
	case err == nil && !ok:
		e.d.Log.Error("lost the session lease to another process; stopping the turn", "session", r.sid)
		r.lost()
		return
	case err == nil:
		r.until = l.ExpiresAt
	}
	if left := r.until.Sub(now); left <= 0 || (err != nil && left <= next) {
		e.d.Log.Error("could not renew the session lease before it ends; stopping the turn so that it does not run on when another process may take the session",
			"session", r.sid, "until", r.until, "retry_in", next, "err", err)
		r.lost()
		return
	}
	if err != nil {
		e.d.Log.Warn("renewing the session lease; trying again before it ends", "session", r.sid, "until", r.until, "retry_in", next, "err", err)
	}
	r.cancel = e.renewAfter(next, r.fire)
}

// errLeaseEnded is the cause of a renewal write's deadline: the lease it would extend ended.
var errLeaseEnded = errors.New("the session lease ended before its renewal was written")

// write renews the lease, bounded by its end. A store that does not honour the deadline
// (SQLite's writer queue consults a context only before its write runs) still stops the
// turn at the lease's end: ended reports that the deadline's own hook did so (and logged
// it). The write itself, and so stop, waits for the store's answer.
func (r *renewal) write(began time.Time) (l Lease, ok, ended bool, err error) {
	e, until := r.e, r.until // the hook may run beside fire: it reads only what never changes
	ctx, cancel := context.WithTimeoutCause(r.ctx, until.Sub(began), errLeaseEnded)
	defer cancel()
	unhook := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), errLeaseEnded) {
			e.d.Log.Error("the session lease's renewal did not finish by the lease's end; stopping the turn", "session", r.sid, "until", until)
			r.lost()
		}
	})
	l, ok, err = e.d.Store.AcquireLease(ctx, r.name, e.owner, began, e.leaseTTL)
	ended = !unhook() && errors.Is(context.Cause(ctx), errLeaseEnded)
	return l, ok, ended, err
}

// stop ends the renewals, waiting for one in flight. A timer that fires after it finds
// the renewal stopped and writes nothing.
func (r *renewal) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.cancel()
}
