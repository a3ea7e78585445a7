package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Election of one replica for work that must not run twice: Telegram's getUpdates (two
// pollers would steal each other's updates and Telegram answers 409) and the Discord
// gateway (two connections would both receive every message). The leader holds a lease
// row (the leases table, written by AcquireLease's single conditional statement, so two
// replicas never both hold it) and renews it every ElectionEvery; a replica that dies
// stops renewing, and another takes the lease once it expires, ElectionTTL later at
// most, or at once when the holder is a process of this host that is gone.
//
// A leader that cannot renew (the database is unreachable) steps down when its own lease
// would have expired by its clock; another replica takes the lease once it has expired by
// that replica's clock. So two replicas lead at once for at most the difference between
// their clocks (NTP keeps that to milliseconds), never for the ttl.

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

	mu        sync.Mutex
	until     time.Time // the end of this replica's lease, by its clock; zero when standing by
	holder    core.Lease
	published bool          // leading, as last told through changed
	changed   chan struct{} // closed and replaced at every change of published
}

// Step campaigns once: it takes, renews or fails to take the lease, and reports whether
// this replica leads afterwards. An error (the store unreachable) keeps a leader leading
// only until its lease would have expired.
func (e *Elector) Step(ctx context.Context) (bool, error) {
	now := e.Now()
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
	is := e.leadingLocked(now)
	if is != e.published {
		e.published = is
		e.notifyLocked()
	}
	return is, err
}

// Leading reports whether this replica holds the lease now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leadingLocked(e.Now())
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
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

func (e *Elector) leadingLocked(now time.Time) bool { return now.Before(e.until) }

func (e *Elector) notifyLocked() {
	if e.changed != nil {
		close(e.changed)
	}
	e.changed = make(chan struct{})
}

// Run campaigns every Every until ctx ends, then releases the lease so that another
// replica takes over at once rather than after the ttl.
func (e *Elector) Run(ctx context.Context) {
	after := e.After
	if after == nil {
		after = time.After
	}
	every := e.Every
	if every <= 0 {
		every = ElectionEvery
	}
	for {
		leading, err := e.Step(ctx)
		if err != nil && ctx.Err() == nil {
			e.logger().Warn("election", "lease", e.Name, "leading", leading, "err", err)
		}
		e.mu.Lock()
		until := e.until
		e.mu.Unlock()
		wait := every
		if leading {
			// Wake in time to step down if renewals keep failing.
			wait = min(every, until.Sub(e.Now()))
		}
		select {
		case <-ctx.Done():
			e.resign(context.WithoutCancel(ctx))
			return
		case <-after(max(wait, 0)):
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
// that is cancelled when it stops leading. Run must be running.
func (e *Elector) Lead(ctx context.Context) (context.Context, context.CancelFunc, error) {
	for {
		ch := e.Changed()
		if e.Leading() {
			lctx, cancel := context.WithCancel(ctx)
			go func() {
				for {
					select {
					case <-lctx.Done():
						return
					case <-ch:
						if !e.Leading() {
							cancel()
							return
						}
						ch = e.Changed()
					}
				}
			}()
			return lctx, cancel, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-ch:
		}
	}
}

func (e *Elector) ttl() time.Duration {
	if e.TTL > 0 {
		return e.TTL
	}
	return ElectionTTL
}

func (e *Elector) logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.New(slog.DiscardHandler)
}
