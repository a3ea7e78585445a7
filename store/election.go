package store

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Election of one replica for work that must not run twice: Telegram's getUpdates (two
// pollers steal each other's updates, and Telegram answers 409) and the Discord gateway
// (two connections both receive every message). The leader holds a lease row (taken by
// AcquireLease's single conditional statement) and renews it every ElectionEvery; once
// a dead leader's lease expires, ElectionTTL later at most, or at once when the holder is
// a gone process of this host, another replica takes it.
//
// A leader that cannot renew steps down when its lease would have expired by its own
// clock, measured from before it sent the renewal; another replica takes the lease once it
// has expired by the database's clock (AcquireLease), measured from when the renewal ran.
// So the leader has stepped down before anyone may take over, however far the replicas'
// wall clocks disagree: Now's times carry the monotonic clock, so a jump of the leader's
// wall clock does not move its end either.

// Election timing: the takeover bound is ElectionTTL (15 s); renewing every 5 s lets two
// renewals fail before the lease lapses.
const (
	ElectionTTL   = 15 * time.Second
	ElectionEvery = 5 * time.Second
)

// Leases is what an election needs of a store.
type Leases interface {
	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error)
	ReleaseLease(ctx context.Context, name, owner string) error
}

// Elector campaigns for one named lease. Step is one campaign (or renewal) at the
// clock's time; Run repeats it every Every until its context ends. Leading and the
// channel from Changed tell the rest of the process.
type Elector struct {
	Name  string
	Owner string
	St    Leases
	Now   func() time.Time
	TTL   time.Duration // ElectionTTL when 0
	Every time.Duration // ElectionEvery when 0
	// Gone reports whether a holder is a process that no longer exists (its lease is
	// then taken over at once); nil waits every holder out.
	Gone func(owner string) bool
	Log  *slog.Logger
	// After makes Run's timer; nil means time.After. Tests step the clock instead.
	After func(time.Duration) <-chan time.Time
	// Expiry makes the leader's timer for its lease's end (Lead); nil means time.After.
	// It is apart from After so that a test ticking Run's timer by hand does not feed
	// it: when it fires, Leading is judged by Now, so a real timer under a test's clock
	// only looks again.
	Expiry func(time.Duration) <-chan time.Time

	mu        sync.Mutex
	until     time.Time // the end of this replica's lease, by its clock (Now); zero when standing by
	holder    core.Lease
	published bool          // leading, as last told through changed
	changed   chan struct{} // closed and replaced at every change of published
}

// Step campaigns once: it takes, renews or fails to take the lease, and reports whether
// this replica leads afterwards. An error keeps a leader leading only until its lease
// would have expired. The store calls are bounded (campaignBound), so a store that does
// not answer cannot hold Run past the lease's end, and leading is judged by the clock
// after them, not when the renewal began.
func (e *Elector) Step(ctx context.Context) (bool, error) {
	now := e.Now()
	ctx, cancel := context.WithTimeout(ctx, e.campaignBound(now))
	defer cancel()
	held, ok, err := e.St.AcquireLease(ctx, e.Name, e.Owner, now, e.ttl())
	if err == nil && !ok && e.Gone != nil && held.Owner != "" && e.Gone(held.Owner) {
		e.logger().Info("taking over the lease of a process that is gone", "lease", e.Name, "holder", held.Owner)
		if err = e.St.ReleaseLease(ctx, e.Name, held.Owner); err == nil {
			held, ok, err = e.St.AcquireLease(ctx, e.Name, e.Owner, now, e.ttl())
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err != nil:
		err = fmt.Errorf("campaigning for %s: %w", e.Name, err)
	case ok:
		e.until, e.holder = held.ExpiresAt, held
	default:
		e.until, e.holder = time.Time{}, held
	}
	return e.publishLocked(e.Now()), err
}

// campaignBound is how long one campaign's store calls may take: a leader's end with its
// lease (by this replica's clock, so a renewal that does not answer gives up when the
// lease it would renew has expired), a standby's Every (its next campaign is due then).
func (e *Elector) campaignBound(now time.Time) time.Duration {
	e.mu.Lock()
	left := e.until.Sub(now)
	e.mu.Unlock()
	if left > 0 {
		return left
	}
	return e.every()
}

// publishLocked reports whether this replica leads at now and, when that changed since
// last told, tells Changed's waiters.
func (e *Elector) publishLocked(now time.Time) bool {
	is := now.Before(e.until)
	if is != e.published {
		e.published = is
		e.notifyLocked()
	}
	return is
}

// Leading reports whether this replica holds the lease now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.Now().Before(e.until)
}

// Holder is the lease as last seen: this replica's, or the leader's when standing by.
func (e *Elector) Holder() core.Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder
}

// Changed returns a channel closed at the next change of Leading.
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changedLocked()
}

func (e *Elector) changedLocked() chan struct{} {
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

func (e *Elector) notifyLocked() {
	if e.changed != nil {
		close(e.changed)
	}
	e.changed = make(chan struct{})
}

// Run campaigns every Every until ctx ends, then releases the lease so that another
// replica takes over at once rather than after the ttl.
func (e *Elector) Run(ctx context.Context) {
	for {
		leading, err := e.Step(ctx)
		if err != nil && ctx.Err() == nil {
			e.logger().Warn("election", "lease", e.Name, "leading", leading, "err", err)
		}
		e.mu.Lock()
		until := e.until
		e.mu.Unlock()
		wait := e.every()
		if leading {
			// Wake in time to step down if renewals keep failing.
			wait = min(wait, until.Sub(e.Now()))
		}
		select {
		case <-ctx.Done():
			e.resign(context.WithoutCancel(ctx))
			return
		case <-timer(e.After, max(wait, 0)):
		}
	}
}

// resign releases a held lease.
func (e *Elector) resign(ctx context.Context) {
	e.mu.Lock()
	held := !e.until.IsZero()
	e.until = time.Time{}
	if e.published {
		e.published = false
		e.notifyLocked()
	}
	e.mu.Unlock()
	if !held {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.St.ReleaseLease(ctx, e.Name, e.Owner); err != nil {
		e.logger().Warn("releasing the election lease", "lease", e.Name, "err", err)
	}
}

// Lead blocks until this replica leads (or ctx ends: an error) and returns a context
// that is cancelled when it stops leading. Run must be running. A timer for the lease's
// end, re-armed at every renewal, cancels it even while Run is stuck in a campaign, so
// the channel never runs past the moment another replica may take the lease.
func (e *Elector) Lead(ctx context.Context) (context.Context, context.CancelFunc, error) {
	for {
		ch := e.Changed()
		if e.Leading() {
			lctx, cancel := context.WithCancel(ctx)
			go e.watch(lctx, cancel)
			return lctx, cancel, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-ch:
		}
	}
}

// watch cancels a leader's context when it stops leading: at a change of Leading, or when
// its lease's end, as last renewed, has come.
func (e *Elector) watch(lctx context.Context, cancel context.CancelFunc) {
	for {
		e.mu.Lock()
		ch, until := e.changedLocked(), e.until
		e.mu.Unlock()
		expired := false
		select {
		case <-lctx.Done():
			return
		case <-ch:
		case <-timer(e.Expiry, max(until.Sub(e.Now()), 0)):
			expired = true
		}
		e.mu.Lock()
		leading := e.publishLocked(e.Now())
		e.mu.Unlock()
		if !leading {
			if expired {
				// Run is still campaigning (or about to): say why the channel stops.
				e.logger().Warn("stepping down: the election lease ended without a renewal", "lease", e.Name, "until", until)
			}
			cancel()
			return
		}
	}
}

// timer is time.After(d), or made by the test's injected maker when it has one.
func timer(made func(time.Duration) <-chan time.Time, d time.Duration) <-chan time.Time {
	if made != nil {
		return made(d)
	}
	return time.After(d)
}

// every and ttl are Every and TTL, or their defaults when not positive.
func (e *Elector) every() time.Duration { return cmp.Or(max(e.Every, 0), ElectionEvery) }
func (e *Elector) ttl() time.Duration   { return cmp.Or(max(e.TTL, 0), ElectionTTL) }

func (e *Elector) logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.New(slog.DiscardHandler)
}
