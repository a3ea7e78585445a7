package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// A lingering lease. When a turn ends normally, the process keeps the session's lease for
// Config.LeaseLinger instead of releasing it at once: a turn of the same session that
// starts here meanwhile (the next message of a burst, a chat that answers quickly) reuses
// it without a store write, and without the acquire's write before its model call. When
// the linger ends with no new turn, the release runs as at the end of a turn, and after
// it the look for work another process left while the lease was held (moreWork): that
// process found the lease held, stored its message and left it to this one.
//
// Every step of a session's lease runs in the session's queue: the turn that keeps it,
// the turn that reuses it, and the linger's end, which the timer (or Close) only queues
// as a system job. So no release can overtake a reuse or an acquire of this process; the
// one state the timer, a reusing turn and Close share is the map of kept leases, under
// one mutex. Whoever takes a kept lease out of the map owns it: a reusing turn, or the
// linger's end, which releases it.

// DefaultLeaseLinger is how long the gateway keeps a session's lease after a turn
// (Config.LeaseLinger). Long enough for the messages that come in bursts — a person's
// several short lines, a media group's updates, a click right after the answer, a bot
// benchmark's next message — to find the lease kept; short, because a message for the
// session that another replica receives meanwhile waits for the linger's end (it finds
// the lease held and leaves the message to this process), and a process killed while it
// lingers leaves the lease to expire (ttl) as a process killed in a turn does.
const DefaultLeaseLinger = time.Second

// lingering is the engine's kept leases.
type lingering struct {
	mu     sync.Mutex
	kept   map[string]*keptLease // by session id
	closed bool                  // Close ran: turns release at once
	// after schedules f after d and returns its cancel (time.AfterFunc's Stop); tests
	// replace it to end a linger themselves.
	after func(d time.Duration, f func()) func() bool
}

// keptLease is a session lease held with no turn running: what its linger's end needs.
type keptLease struct {
	until time.Time       // the lease's expiry as last written
	stop  func() bool     // cancels the linger's timer
	ctx   context.Context // the kept turn's: a turn started at the end runs under it
	// look is what the last turn saw, for moreWork after the release: the session as it
	// committed it, the person messages it loaded, whether a flush was rebased.
	sess     Session
	seenUser *seenPeople
	rebased  bool
	msg      Message // the message that started the turn (a system job: none)
	person   bool    // a person's message started it (see autoHeld)
}

// keep keeps the lease t's turn held (until: its expiry; ctx: the turn's), if the engine
// lingers, the lease leaves ample time and the turn left nothing a kept lease would make
// look cut off (see leftResumable); it reports whether it did. The release and the look
// for work are then the linger's end's.
func (t *jobRun) keep(ctx context.Context, until time.Time) bool {
	e := t.e
	d := e.cfg.LeaseLinger
	if d <= 0 || t.seenUser == nil || until.Sub(e.d.Now()) < e.leaseTTL/2+d {
		return false // no linger, no turn ran (nothing to compare a look with), or too late
	}
	if t.leftResumable(ctx) {
		return false
	}
	k := &keptLease{until: until, ctx: ctx, sess: t.sess, seenUser: t.seenUser, rebased: t.rebased,
		msg: t.j.msg, person: t.j.sys == nil || t.j.person}
	id := t.sess.ID
	l := &e.linger
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.kept == nil {
		l.kept = map[string]*keptLease{}
	}
	l.kept[id] = k
	k.stop = l.after(d, func() { e.endLingerSoon(id, k) })
	return true
}

// leftResumable reports whether a lease this process left behind (killed while it
// lingers) would leave the next start something a released lease would not, so the turn
// releases at once instead:
//   - the turn stopped short of a visible end (t.cut: agent.max_iterations, a tool round's
//     stop, an interruption, the model failing): its newest entry may be a tool round, the
//     chat was told to send a message to go on, and Resume would take a leftover lease
//     for a turn cut off and run the agent again, unasked;
//   - a reply of this process to the session is unsent (its send failed): the start-up
//     backlog leaves a session's rows to the holder of its live lease, which is dead.
//
// Both are known in memory as a rule; the store is read only after a send failed here. A
// store it cannot read counts as resumable (release: the safe side).
func (t *jobRun) leftResumable(ctx context.Context) bool {
	e := t.e
	if t.cut {
		return true
	}
	if !e.sending.anyFailed() {
		return false
	}
	rows, err := e.d.Store.UnsentOutbox(ctx, []string{t.sess.Address.Channel}, 0)
	if err != nil {
		e.d.Log.Warn("listing unsent replies before keeping the session's lease", "session", t.sess.ID, "err", err)
		return true
	}
	return slices.ContainsFunc(rows, func(o Outgoing) bool { return o.SessionID == t.sess.ID && o.Owner == e.owner })
}

// take hands the session's kept lease to the caller, which then owns it (its release
// included), and stops its linger.
func (l *lingering) take(id string) (*keptLease, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.kept[id]
	if ok {
		delete(l.kept, id)
		k.stop()
	}
	return k, ok
}

// holds reports whether this process keeps the session's lease from its last turn.
func (l *lingering) holds(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kept[id] != nil
}

// takeIf takes the session's kept lease only if it is still k (no turn took it since).
func (l *lingering) takeIf(id string, k *keptLease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept[id] != k {
		return false
	}
	delete(l.kept, id)
	return true
}

// reuse takes the session's kept lease for a turn starting now, if its known expiry
// leaves ample time (the first renewal comes ttl/3 after the turn starts); a lease near
// its expiry is taken out of the map too, and acquired again by the caller, which renews
// it.
func (e *Engine) reuse(id string) (time.Time, bool) {
	k, ok := e.linger.take(id)
	if !ok || k.until.Sub(e.d.Now()) < e.leaseTTL/2 {
		return time.Time{}, false
	}
	return k.until, true
}

// endLingerSoon queues the end of k's linger in its session's queue: the timer's and
// Close's way to release, behind whatever the session runs or has queued (a turn queued
// first reuses the lease, and the end then finds it taken).
func (e *Engine) endLingerSoon(id string, k *keptLease) {
	j := &job{ctx: context.WithoutCancel(k.ctx), done: make(chan error, 1), sessionID: id, bare: true, msg: k.msg, person: k.person}
	j.sys = func(ctx context.Context, t *jobRun) error { return t.endLinger(ctx, k) }
	e.enqueue(id, j, false)
}

// endLinger releases k's lease unless a turn took it meanwhile, then looks for work
// another process left for the session while it was held, and runs it as runTurns would
// (under the context of the job that kept the lease). ctx is not cancelled: the release
// and the look are bookkeeping.
func (t *jobRun) endLinger(ctx context.Context, k *keptLease) error {
	e := t.e
	if !e.linger.takeIf(t.j.sessionID, k) {
		return nil
	}
	name := SessionLease(t.j.sessionID)
	if err := e.d.Store.ReleaseLease(ctx, name, e.owner); err != nil {
		e.d.Log.Warn("releasing the session lease", "session", t.j.sessionID, "err", err)
	}
	t.sess, t.seenUser, t.rebased = k.sess, k.seenUser, k.rebased
	again, err := t.moreWork(ctx)
	if err != nil || !again {
		return err
	}
	if k.ctx.Err() != nil { // shutting down: the next start's Resume answers it
		e.d.Log.Info("work left for the session when its lease was released; not started, the job's context ended", "session", t.sess.ID)
		return nil
	}
	if err := t.runTurns(k.ctx); !errors.Is(err, errLeaseHeld) {
		return err
	}
	return nil // another process took the lease since the release: the work is its
}

// Close ends every kept lease at once (released, then the look for work left meanwhile)
// and makes turns that end from now on release theirs at once; then it waits as Wait
// does. A shutdown calls it instead of Wait, so that a restarted process or another
// replica does not wait for the ttl.
func (e *Engine) Close(ctx context.Context) error {
	l := &e.linger
	l.mu.Lock()
	l.closed = true
	kept := make(map[string]*keptLease, len(l.kept))
	for id, k := range l.kept {
		k.stop()
		kept[id] = k
	}
	l.mu.Unlock()
	for id, k := range kept {
		e.endLingerSoon(id, k)
	}
	return e.Wait(ctx)
}
