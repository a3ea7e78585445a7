package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// Delivery through the outbox. Every reply a commit produces is a row of that commit
// (Change.Outbox), sent right after it in the same goroutine and marked sent; a process
// killed in between leaves the row for the next start (DeliverUnsent). A reply of no
// transition that answers a de-duplicated inbound event is committed lazily with the
// event's key, so a replay after a kill is neither answered twice nor left unanswered.

// DefaultOutboxMaxAge is how old an unsent reply may be and still be delivered, after a
// restart or by the retries of a failed send (channels.outbox_max_age).
const DefaultOutboxMaxAge = 24 * time.Hour

// hasReply reports whether an effect kind sends a reply.
func hasReply(k machine.EffectKind) bool {
	return k == machine.EffSay || k == machine.EffRetire || k == machine.EffApprovals || k == machine.EffProgress
}

// queueReplies turns the replies of o's effects into outbox rows of o.Change; each effect
// remembers its row (Effect.Row), so carryOut delivers exactly what was committed.
func (t *jobRun) queueReplies(ctx context.Context, o *machine.Outcome) {
	for i := range o.Effects {
		eff := &o.Effects[i]
		if !hasReply(eff.Kind) {
			continue
		}
		r := t.address(eff.Reply)
		if eff.Kind == machine.EffProgress {
			r.ReplaceID = t.e.progress.get(ctx, eff.Plan.ID)
		}
		eff.Reply = r
		o.Change.Outbox = append(o.Change.Outbox, t.row(r))
		eff.Row = len(o.Change.Outbox)
	}
}

// row is the outbox entry of reply r of this session.
func (t *jobRun) row(r core.Reply) core.Outgoing {
	return core.Outgoing{SessionID: t.sess.ID, Reply: r, CreatedAt: t.e.d.Now(), Owner: t.e.d.Owner}
}

// address fills in where a reply goes and which event it answers.
func (t *jobRun) address(r core.Reply) core.Reply {
	if r.To == (core.Address{}) {
		r.To = t.sess.Address
	}
	if r.InReplyTo == "" {
		r.InReplyTo = t.j.msg.ID
	}
	return r
}

// deliver sends one committed outbox row and marks it sent. When a row of its session
// waits to be sent again, the row is not sent but waits behind it (errHeld), so a chat's
// replies leave in commit order. A failure is counted on the row and returned; the row
// waits for RetryUnsent (or the next start). A reply the platform refused for good
// (core.ErrRefused) is dropped at once, and the chat told (drop, tellDropped).
func (e *Engine) deliver(ctx context.Context, o *core.Outgoing) (string, error) {
	return e.deliverRow(ctx, o, false, false)
}

// deliverRow is deliver for a row whose attempt ClaimOutbox may have counted (claimed);
// retry is RetryUnsent sending a row that waits (it is not held behind itself).
func (e *Engine) deliverRow(ctx context.Context, o *core.Outgoing, claimed, retry bool) (string, error) {
	if o.ID == 0 {
		return e.send(ctx, o.Reply)
	}
	// Marking is bookkeeping: it must not be lost to the job's context ending.
	mctx := context.WithoutCancel(ctx)
	if pid, ok := e.sending.takeUnmarked(o.ID); ok {
		// Delivered already; only its mark failed: the chat must not get it twice.
		if err := e.d.Store.MarkSent(mctx, o.ID, pid, e.d.Now()); err != nil {
			e.sending.sentUnmarked(o.ID, pid)
			return "", fmt.Errorf("marking reply %d sent: %w", o.ID, err)
		}
		return pid, nil
	}
	if retry {
		if !e.sending.start(o.ID) {
			return "", errInFlight
		}
	} else if ok, held := e.sending.admit(o.ID, o.SessionID, e.d.Now()); held {
		return "", errHeld
	} else if !ok {
		return "", errInFlight
	}
	id, err := e.send(ctx, o.Reply)
	if err != nil && errors.Is(err, core.ErrRefused) && ctx.Err() == nil {
		derr := e.drop(mctx, *o, dropRefused, "refused by the platform: "+machine.OneLine(err.Error()))
		if derr != nil {
			e.d.Log.Warn("dropping a refused reply; it waits for a retry", "outbox", o.ID, "err", derr)
		}
		e.sending.end(o.ID, o.SessionID, derr != nil, 0, e.d.Now())
		return "", err
	}
	e.sending.end(o.ID, o.SessionID, err != nil, core.SendDelay(err), e.d.Now())
	if err != nil {
		if !claimed {
			if nerr := e.d.Store.NoteOutboxAttempt(mctx, o.ID); nerr != nil {
				e.d.Log.Warn("counting a failed delivery", "outbox", o.ID, "err", nerr)
			}
		}
		return "", err
	}
	if merr := e.d.Store.MarkSent(mctx, o.ID, id, e.d.Now()); merr != nil {
		e.d.Log.Warn("marking a reply sent; marked again by the retry loop", "outbox", o.ID, "err", merr)
		e.sending.sentUnmarked(o.ID, id)
	}
	if isDropNotice(o.Reply) {
		e.told(o.ID)
	}
	return id, nil
}

var (
	// errInFlight: the row is being delivered already (by the start-up backlog or a retry).
	errInFlight = errors.New("delivery already in progress")
	// errHeld: an earlier reply of the session waits to be sent again; this one waits
	// behind it.
	errHeld = errors.New("waiting behind an earlier reply of the chat")
)

// answer sends the answer of a read-only command (status, help, show, usage), then records
// the job's inbound event with a lazy commit. The answer is computed afresh from the
// store, so it needs no outbox row (which would cost a transaction to mark it sent): a
// kill before the record leaves the event to be redelivered and answered; only a kill
// between the send and the record answers twice. While earlier replies of the chat wait
// to be sent again, or when the send fails but may succeed later, the answer becomes an
// outbox row of that commit instead, waiting its turn behind them.
func (t *jobRun) answer(ctx context.Context, r core.Reply) error {
	var failed error
	if !t.e.sending.holds(t.sess.ID, t.e.d.Now()) {
		_, err := t.send(ctx, r)
		if err == nil || errors.Is(err, core.ErrRefused) || ctx.Err() != nil {
			return t.recordAnswered(ctx, core.Change{SessionID: t.sess.ID, Lazy: true})
		}
		failed = err
	}
	ch := t.withRows(core.Change{SessionID: t.sess.ID, Lazy: true}, []core.Reply{r})
	if err := t.recordAnswered(ctx, ch); err != nil || len(ch.Outbox) == 0 || ch.Outbox[0].ID == 0 {
		return err
	}
	if row := ch.Outbox[0]; failed != nil {
		t.e.sending.end(row.ID, row.SessionID, true, core.SendDelay(failed), t.e.d.Now())
	} else {
		_, _ = t.e.deliver(ctx, &row)
	}
	return nil
}

// recordAnswered commits ch with the job's inbound event; a change without rows is not
// committed when there is no event to record.
func (t *jobRun) recordAnswered(ctx context.Context, ch core.Change) error {
	ch.Inbound, t.j.inbound = t.j.inbound, nil
	if ch.Inbound == nil && len(ch.Outbox) == 0 {
		return nil
	}
	if _, err := t.e.d.Store.Commit(ctx, ch); err != nil && !errors.Is(err, core.ErrDuplicate) {
		if len(ch.Outbox) == 0 {
			// The person has the answer: handling the job again would send it twice.
			t.e.d.Log.Warn("recording the answered event (a redelivery of it is answered again)", "session", t.sess.ID, "err", err)
			return nil
		}
		return fmt.Errorf("recording the answered event of session %s: %w", t.sess.ID, err)
	}
	return nil
}

// commitSaying commits ch with replies rs as outbox rows of it, then delivers them.
func (t *jobRun) commitSaying(ctx context.Context, ch core.Change, rs ...core.Reply) error {
	ch = t.withRows(ch, rs)
	if err := t.commit(ctx, ch); err != nil {
		return err
	}
	t.sayCommitted(ctx, ch)
	return nil
}

// withRows adds replies rs to ch as its outbox rows.
func (t *jobRun) withRows(ch core.Change, rs []core.Reply) core.Change {
	ch.Outbox = slices.Clip(ch.Outbox)
	for _, r := range rs {
		ch.Outbox = append(ch.Outbox, t.row(t.address(r)))
	}
	return ch
}

// sayCommitted delivers the outbox rows of ch once it is committed.
func (t *jobRun) sayCommitted(ctx context.Context, ch core.Change) {
	for i := range ch.Outbox {
		_, _ = t.e.deliver(ctx, &ch.Outbox[i])
	}
}

// post says what no transition produced (an error notice, the report of missed reminders)
// as outbox rows of a lazy commit of their own. The failure being reported may be the
// store's own: when that commit fails, the replies are sent directly. They answer no
// inbound event, so a redelivered message is still handled.
func (t *jobRun) post(ctx context.Context, rs ...core.Reply) error {
	if err := t.commitSaying(ctx, core.Change{SessionID: t.sess.ID, Lazy: true}, rs...); err != nil {
		t.e.d.Log.Warn("storing a notice in the outbox; sending it directly", "session", t.sess.ID, "err", err)
		for _, r := range rs {
			_, _ = t.send(ctx, r)
		}
	}
	return nil
}

// DeliverUnsent delivers the replies a previous process committed and never sent (see
// Unsent), and returns how many it sent.
func (e *Engine) DeliverUnsent(ctx context.Context, channels []string, maxAge time.Duration, only func(sessionID string) bool) (int, error) {
	b, err := e.Unsent(ctx, channels, maxAge, only)
	if err != nil {
		return 0, err
	}
	return b.Deliver(ctx), nil
}

// Backlog is the unsent replies a previous process left, listed at start-up.
type Backlog struct {
	e    *Engine
	rows []core.Outgoing
}

// Unsent lists the replies a previous process committed and never sent, for the given
// channels and the sessions only selects (nil = all), oldest first. Call it before
// receiving, so no reply of this process is among them. Rows of another replica that still
// runs are its own to send (ownerLive). Rows older than maxAge (0 = DefaultOutboxMaxAge)
// are dropped: logged, counted, and the chat told once sending works (drop, tellDropped).
func (e *Engine) Unsent(ctx context.Context, channels []string, maxAge time.Duration, only func(sessionID string) bool) (Backlog, error) {
	if maxAge <= 0 {
		maxAge = DefaultOutboxMaxAge
	}
	rows, err := e.d.Store.UnsentOutbox(ctx, channels, 0)
	if err != nil {
		return Backlog{}, fmt.Errorf("listing unsent replies: %w", err)
	}
	b := Backlog{e: e}
	live := map[string]bool{}
	for _, o := range rows {
		if only != nil && !only(o.SessionID) {
			continue
		}
		if once(live, o.Owner, func(owner string) bool { return e.ownerLive(ctx, owner) }) {
			continue
		}
		// A row this process is sending now is its delivery's to settle: dropped beside it,
		// a send that gets through would be both delivered and given up.
		if why := e.dropReason(o, maxAge); why != "" && !e.sending.flying(o.ID) {
			if err := e.drop(ctx, o, dropExpired, why); err != nil {
				return Backlog{}, err
			}
			continue
		}
		b.rows = append(b.rows, o)
	}
	return b, nil
}

// Deliver sends the backlog in order and returns how many went out.
func (b Backlog) Deliver(ctx context.Context) int {
	sent := b.deliver(ctx)
	if sent > 0 {
		b.e.d.Log.Info("delivered replies left unsent by the last run", "count", sent)
	}
	b.e.tellDropped(ctx)
	return sent
}

// deliver sends the rows in order, leaving those of sessions another live process holds
// to the retry loop (retryWhenFree), and returns how many went out.
func (b Backlog) deliver(ctx context.Context) int {
	e := b.e
	sent := 0
	type holding struct {
		owner string
		held  bool
	}
	busy := map[string]holding{}
	for i := range b.rows {
		o := &b.rows[i]
		h := once(busy, o.SessionID, func(sid string) holding {
			owner, held := e.holderElsewhere(ctx, sid)
			return holding{owner, held}
		})
		if h.held {
			e.retryWhenFree(b.rows[i:i+1], h.owner)
			continue
		}
		if _, err := e.deliverLeft(ctx, o, false); err == nil {
			sent++
		}
	}
	return sent
}

// once returns f(k), computed the first time k is asked for and kept in m: a store read
// per owner or session of a listing, not per row.
func once[K comparable, V any](m map[K]V, k K, f func(K) V) V {
	v, ok := m[k]
	if !ok {
		v = f(k)
		m[k] = v
	}
	return v
}

// ReplicaLease is the lease a running replica holds under its owner id; a survivor that
// finds the replica gone takes it over to claim its leftovers, so a lease held by anyone
// else means the replica is gone.
func ReplicaLease(owner string) string { return "replica:" + owner }

// ownerLive reports whether owner, the engine that committed an outbox row, is another
// replica that still runs (it holds its replica lease, unexpired, and is not a process of
// this host that has ended): its unsent rows are its own to send or retry. "", this
// engine, and an owner without a replica lease (a process without replicas) are not.
func (e *Engine) ownerLive(ctx context.Context, owner string) bool {
	if owner == "" || owner == e.d.Owner || OwnerGone(owner) {
		return false
	}
	live, _ := e.replicaLive(ctx, owner)
	return live
}

// replicaLive reads owner's replica lease: known is false when there is none (or it cannot
// be read); live, that owner holds it unexpired.
func (e *Engine) replicaLive(ctx context.Context, owner string) (live, known bool) {
	if owner == "" {
		return false, false
	}
	l, err := e.d.Store.Lease(ctx, ReplicaLease(owner), e.d.Now())
	if err != nil {
		if !errors.Is(err, core.ErrNotFound) {
			e.d.Log.Warn("reading a replica lease", "replica", owner, "err", err)
		}
		return false, false
	}
	return l.Owner == owner && l.ExpiresAt.After(e.d.Now()), true
}

// deliverLeft delivers a row another engine committed and left unsent, claimed first so
// that of two replicas delivering one dead replica's leftovers only one sends it (a row
// claimed by another is errInFlight). This engine's own rows need no claim. retry is as
// for deliverRow.
func (e *Engine) deliverLeft(ctx context.Context, o *core.Outgoing, retry bool) (string, error) {
	if o.ID != 0 && o.Owner != e.d.Owner {
		got, err := e.d.Store.ClaimOutbox(context.WithoutCancel(ctx), o.ID, o.Attempts)
		if err != nil {
			e.d.Log.Warn("claiming a reply left unsent", "outbox", o.ID, "err", err)
			// A failed attempt of this process, so the retry loop tries it again.
			e.sending.retryLater(o.ID, o.SessionID, e.d.Now())
			return "", err
		}
		if !got {
			return "", errInFlight
		}
		o.Attempts++
		return e.deliverRow(ctx, o, true, retry)
	}
	return e.deliverRow(ctx, o, false, retry)
}

// dropReason says why row o is given up at a listing: it is older than maxAge. Retries are
// bounded by age only, never by a count of attempts.
func (e *Engine) dropReason(o core.Outgoing, maxAge time.Duration) string {
	if e.d.Now().Sub(o.CreatedAt) > maxAge {
		return fmt.Sprintf("older than %s (channels.outbox_max_age)", maxAge)
	}
	return ""
}

// onFail answers a reply that could not be delivered with its notice, sent directly: if
// the notice gets through the row is given up, otherwise it stays for the next start.
func (t *jobRun) onFail(ctx context.Context, eff machine.Effect, o *machine.Outcome, err error) {
	if eff.OnFail == "" {
		return
	}
	text := strings.ReplaceAll(eff.OnFail, "{error}", machine.OneLine(err.Error()))
	if errors.Is(err, errHeld) || errors.Is(err, errInFlight) {
		return // not failed: it waits its turn, or is being sent
	}
	if _, nerr := t.send(ctx, core.Reply{Kind: core.ReplyNotice, Text: text}); nerr != nil || eff.Row == 0 {
		return
	}
	row := o.Change.Outbox[eff.Row-1]
	if errors.Is(err, core.ErrRefused) {
		t.e.unnote(row.SessionID) // dropped already (deliverRow); this notice tells the chat
		return
	}
	if derr := t.e.drop(context.WithoutCancel(ctx), row, dropTold, "undeliverable; the chat was told"); derr != nil {
		t.e.d.Log.Warn("dropping an undeliverable reply", "outbox", row.ID, "err", derr)
		return
	}
	t.e.sending.forget(row.ID)
}

// DeliverLeft delivers the replies another process committed and never sent, for the
// replicas that outlive it (at start-up, Unsent and Backlog.Deliver do this). Each
// session's rows are delivered by a job in its queue: a reply this process commits is
// delivered by the job that committed it, so the rows still unsent when this job runs
// are not in flight here. Sessions whose lease another live process holds wait until it is
// free (retryWhenFree). It returns how many replies went out.
func (e *Engine) DeliverLeft(ctx context.Context, channels []string, maxAge time.Duration) (int, error) {
	b, err := e.Unsent(ctx, channels, maxAge, nil)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var dones []<-chan error
	var sent atomic.Int64
	for _, o := range b.rows {
		sid := o.SessionID
		if seen[sid] {
			continue
		}
		seen[sid] = true
		dones = append(dones, e.systemAsync(ctx, sid, func(ctx context.Context, _ *jobRun) error {
			left, err := e.Unsent(ctx, channels, maxAge, func(id string) bool { return id == sid })
			if err == nil {
				sent.Add(int64(left.deliver(ctx)))
			}
			return err
		}))
	}
	for _, done := range dones {
		if err := waitJob(ctx, done); err != nil && ctx.Err() == nil {
			e.d.Log.Warn("delivering replies left unsent", "err", err)
		}
	}
	return int(sent.Load()), nil
}

// retryWhenFree hands the rows a gone process left in a session another live process
// holds to the retry loop, which claims and sends them once the lease is free: the holder
// sends only its own rows. The holder's own rows, and rows of no known owner, stay its: it
// may be sending them now.
func (e *Engine) retryWhenFree(rows []core.Outgoing, holder string) {
	now := e.d.Now()
	for _, o := range rows {
		if o.Owner != "" && o.Owner != holder && o.Owner != e.d.Owner {
			e.sending.retryLater(o.ID, o.SessionID, now)
		}
	}
}
