package core

import (
	"context"
	"crypto/rand"
	"errors"
	"time"
)

// One process runs a session's turn: the turn runs only while this process holds the
// session's lease (SessionLease), renewed every ttl/3 while it runs and released when it
// ends. A person's command that changes state needs no lease (its commit is a
// compare-and-set on the session's version); only agent turns do, since they act on the
// workspace. A lease left behind by a killed process marks a turn that did not end:
// Resume takes it over once it has expired.

// LeaseStore is the part of Store leases need.
type LeaseStore interface {
	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (Lease, bool, error)
	ReleaseLease(ctx context.Context, name, owner string) error
	Lease(ctx context.Context, name string) (Lease, error)
}

// DefaultLeaseTTL is how long a session lease lasts without renewal.
const DefaultLeaseTTL = 30 * time.Second

// newOwner is this process's lease owner id: random, so two processes (or a restarted
// one) never share it.
func newOwner() string {
	id, err := newID(rand.Reader, 10)
	if err != nil {
		panic("reading random bytes for the lease owner: " + err.Error())
	}
	return id
}

// acquire takes the session's lease, taking it over from a holder that is gone (see
// owner.go).
func (e *Engine) acquire(ctx context.Context, name string) (Lease, bool, error) {
	held, ok, err := e.d.Store.AcquireLease(ctx, name, e.owner, e.d.Now(), e.leaseTTL)
	if err != nil || ok || !ownerGone(held.Owner) {
		return held, ok, err
	}
	e.d.Log.Info("taking over the lease of a process that is gone", "lease", name, "holder", held.Owner)
	if err := e.d.Store.ReleaseLease(ctx, name, held.Owner); err != nil {
		return held, false, err
	}
	return e.d.Store.AcquireLease(ctx, name, e.owner, e.d.Now(), e.leaseTTL)
}

// errLeaseHeld: another process holds the session's lease; the job is left to it.
var errLeaseHeld = errors.New("session lease held by another process")

// withLease runs fn while this process holds the session's lease. Nested calls share the
// outer lease. When another process holds it, fn does not run and errLeaseHeld is
// returned. Losing the lease while fn runs (a renewal refused: another process took it
// over after this one stalled past the ttl), or renewals failing until the lease would
// end (renew.go), cancels fn's context. The lease is released when fn ends.
func (t *jobRun) withLease(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	ls := t.e.d.Store
	if t.leased {
		return fn(ctx)
	}
	sid := t.sess.ID
	name := SessionLease(sid)
	until, err := t.e.takeLease(ctx, name, sid)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(ctx)
	r := t.e.startRenewal(lctx, name, sid, until, cancel)
	t.leased = true
	defer func() {
		t.leased = false
		r.stop()
		cancel()
		if err := ls.ReleaseLease(context.WithoutCancel(ctx), name, t.e.owner); err != nil {
			t.e.d.Log.Warn("releasing the session lease", "session", sid, "err", err)
		}
	}()
	return fn(lctx)
}

// takeLease takes the session's lease for a turn from the store. It returns the lease's
// expiry, or errLeaseHeld when another process holds it.
func (e *Engine) takeLease(ctx context.Context, name, sid string) (time.Time, error) {
	held, ok, err := e.acquire(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		e.d.Log.Info("session turn left to the process holding its lease", "session", sid, "holder", held.Owner, "until", held.ExpiresAt)
		return time.Time{}, errLeaseHeld
	}
	return held.ExpiresAt, nil
}

// holderElsewhere reports whether another process holds an unexpired lease on the
// session, and which, for delivering the replies left in it: a session lease of a replica known to be gone
// (replicaGone) does not count, though it has not expired yet. A replica's lease lapses
// (15 s) before the session leases it held (30 s), and the survivor that claims it
// delivers what it left while the claim lasts; waiting for the session lease would leave
// a reply of a turn that had ended unsent until some replica's next start.
func (e *Engine) holderElsewhere(ctx context.Context, sessionID string) (string, bool) {
	l, ok := e.foreignLease(ctx, sessionID)
	if ok && e.live(l) && !e.replicaGone(ctx, l.Owner) {
		return l.Owner, true
	}
	return "", false
}

// replicaGone reports whether owner ran as a replica (it took a replica lease) that is
// known to be gone: its replica lease expired, or another replica took it over to claim
// its leftovers. No replica lease at all says nothing (a process without replicas, or a
// claim already released), so false.
func (e *Engine) replicaGone(ctx context.Context, owner string) bool {
	live, known := e.replicaLive(ctx, owner)
	return known && !live
}

// live reports whether a lease still binds others: unexpired, and its holder not gone.
func (e *Engine) live(l Lease) bool { return l.ExpiresAt.After(e.d.Now()) && !ownerGone(l.Owner) }

// foreignLease returns the session's lease when another owner has it (expired or not).
func (e *Engine) foreignLease(ctx context.Context, sessionID string) (Lease, bool) {
	l, err := e.d.Store.Lease(ctx, SessionLease(sessionID))
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			e.d.Log.Warn("reading the session lease", "session", sessionID, "err", err)
		}
		return Lease{}, false
	}
	return l, l.Owner != e.owner
}
