package core

import (
	"context"
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
// turn ended or the lease was lost. A failed write is logged and tried again. The next
// renewal is due ttl/3 after this one began, not after its write ended, as a ticker's
// would be: a slow failing write (a stalled database) must leave its retry before the
// lease it could not extend expires, so the write's time comes off the wait.
func (r *renewal) fire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.ctx.Err() != nil {
		return
	}
	e := r.e
	began := e.d.Now()
	l, ok, err := e.leases.AcquireLease(r.ctx, r.name, e.owner, began, e.leaseTTL)
	switch {
	case err != nil:
		e.d.Log.Warn("renewing the session lease", "session", r.sid, "err", err)
	case !ok:
		e.d.Log.Error("lost the session lease to another process; stopping the turn", "session", r.sid)
		r.lost()
		return
	default:
		r.until = l.ExpiresAt
	}
	r.cancel = e.renewAfter(max(0, e.leaseTTL/3-e.d.Now().Sub(began)), r.fire)
}

// stop ends the renewals, waiting for one in flight, and returns the lease's expiry as
// last written. A timer that fires after it finds the renewal stopped and writes nothing.
func (r *renewal) stop() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.cancel()
	return r.until
}
