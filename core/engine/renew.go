package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// renewal keeps a turn's session lease, renewing it every ttl/3 from a timer. Most turns
// end sooner, so nothing runs for them at all: a goroutine waiting beside every turn would
// cost each message a goroutine start and the wake-up of an idle P.
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
	r.cancel = e.renewAfter(e.cfg.LeaseTTL/3, r.fire)
	return r
}

// fire renews the lease (the timer's function) and schedules the next renewal, due ttl/3
// after this one began: a slow failing write (a stalled database) must leave time for its
// retry before the lease expires. A turn never runs past its lease's end by this process's
// clock, since another process's Resume may then run the session's turn too (calling the
// model, and perhaps a mutating tool, twice). So the write is bounded by the lease's end,
// and a failed write is retried only when the lease outlasts the wait; else the turn stops.
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
	next := max(0, e.cfg.LeaseTTL/3-now.Sub(began))
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
// turn then: ended reports that the deadline's hook did so (and logged it).
func (r *renewal) write(began time.Time) (l core.Lease, ok, ended bool, err error) {
	e, until := r.e, r.until // the hook may run beside fire: it reads only what never changes
	ctx, cancel := context.WithTimeoutCause(r.ctx, until.Sub(began), errLeaseEnded)
	defer cancel()
	unhook := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), errLeaseEnded) {
			e.d.Log.Error("the session lease's renewal did not finish by the lease's end; stopping the turn", "session", r.sid, "until", until)
			r.lost()
		}
	})
	l, ok, err = e.d.Store.AcquireLease(ctx, r.name, e.d.Owner, began, e.cfg.LeaseTTL)
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
