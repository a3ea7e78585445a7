package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A session's turn runs only while this process holds the session's lease, renewed every
// ttl/3 and released when it ends. A person's command needs none (its commit is a
// compare-and-set on the session's version); agent turns do, since they act on the
// workspace. A lease left behind by a killed process marks a turn that did not end.

// SessionLease names the lease of a session's turns.
func SessionLease(sessionID string) string { return "session:" + sessionID }

// DefaultLeaseTTL is how long a session lease lasts without renewal.
const DefaultLeaseTTL = 30 * time.Second

// Lease owners name their process: "<host>/<pid>/<random>". A lease whose owner is a
// process of this host that does not exist was left by a killed plangate: it is taken
// over at once rather than after its expiry, so a restart right after kill -9 carries on
// without waiting out the ttl. A pid reused by another process only makes the wait
// happen (the safe side); another host's owner is always waited out.

// processOwner is this process's owner id, one per process: engines of one process (a
// test's restarted engine beside a hung one) share it, as they share the process's fate.
// Its random part keeps two processes (or a restarted one) from ever sharing it.
var processOwner = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	id, err := machine.NewID(rand.Reader, 10)
	if err != nil {
		panic("reading random bytes for the lease owner: " + err.Error())
	}
	return fmt.Sprintf("%s/%d/%s", strings.ReplaceAll(host, "/", "_"), os.Getpid(), id)
})

// ProcessOwner is this process's lease owner id, for leases held outside the engine
// (the polling election).
func ProcessOwner() string { return processOwner() }

// OwnerGone reports whether a lease owner is a process of this host that has ended, so
// its lease can be taken over at once.
func OwnerGone(owner string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || strings.ReplaceAll(host, "/", "_") != parts[0] {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// errLeaseHeld: another process holds the session's lease; the job is left to it.
var errLeaseHeld = errors.New("session lease held by another process")

// withLease runs fn while this process holds the session's lease (nested calls share it);
// when another process holds it, fn does not run and errLeaseHeld is returned. Losing the
// lease while fn runs (renew.go) cancels fn's context. The lease is released when fn ends.
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
		if err := ls.ReleaseLease(context.WithoutCancel(ctx), name, t.e.d.Owner); err != nil {
			t.e.d.Log.Warn("releasing the session lease", "session", sid, "err", err)
		}
	}()
	return fn(lctx)
}

// takeLease takes the session's lease for a turn from the store. It returns the lease's
// expiry by this process's clock (ttl after the now it passed, which is never after the
// store's end: the store measures the ttl from when its statement ran, by its own clock),
// or errLeaseHeld when another process holds it.
// A holder that is gone (OwnerGone) is released and the lease taken over.
func (e *Engine) takeLease(ctx context.Context, name, sid string) (time.Time, error) {
	held, ok, err := e.d.Store.AcquireLease(ctx, name, e.d.Owner, e.d.Now(), e.cfg.LeaseTTL)
	if err == nil && !ok && OwnerGone(held.Owner) {
		e.d.Log.Info("taking over the lease of a process that is gone", "lease", name, "holder", held.Owner)
		if err = e.d.Store.ReleaseLease(ctx, name, held.Owner); err == nil {
			held, ok, err = e.d.Store.AcquireLease(ctx, name, e.d.Owner, e.d.Now(), e.cfg.LeaseTTL)
		}
	}
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		e.d.Log.Info("session turn left to the process holding its lease", "session", sid, "holder", held.Owner, "until", held.ExpiresAt)
		return time.Time{}, errLeaseHeld
	}
	return held.ExpiresAt, nil
}

// holderElsewhere reports whether another process holds an unexpired lease on the session,
// and which, for delivering the replies left in it. The lease of a replica known to be
// gone (its replica lease expired or taken over) does not count: a replica's lease lapses
// (15 s) before its session leases (30 s), and the survivor that claims it delivers what it
// left while the claim lasts. No replica lease at all says nothing.
func (e *Engine) holderElsewhere(ctx context.Context, sessionID string) (string, bool) {
	l, ok := e.foreignLease(ctx, sessionID)
	if !ok || !e.live(l) {
		return "", false
	}
	if live, known := e.replicaLive(ctx, l.Owner); known && !live {
		return "", false
	}
	return l.Owner, true
}

// live reports whether a lease still binds others: unexpired (its ExpiresAt is on this
// process's clock, from the store's), and its holder not gone.
func (e *Engine) live(l core.Lease) bool { return l.ExpiresAt.After(e.d.Now()) && !OwnerGone(l.Owner) }

// foreignLease returns the session's lease when another owner has it (expired or not).
func (e *Engine) foreignLease(ctx context.Context, sessionID string) (core.Lease, bool) {
	l, err := e.d.Store.Lease(ctx, SessionLease(sessionID), e.d.Now())
	if err != nil {
		if !errors.Is(err, core.ErrNotFound) {
			e.d.Log.Warn("reading the session lease", "session", sessionID, "err", err)
		}
		return core.Lease{}, false
	}
	return l, l.Owner != e.d.Owner
}
