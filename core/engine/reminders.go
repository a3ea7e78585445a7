package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Reminders at least once: the scheduler claims a reminder's occurrence through
// ClaimReminder, which composes the reminder and commits it as an outbox row in the same
// transaction as the firing-ledger claim. Nudge then delivers that row in the session's
// queue (after a running turn); a process killed in between leaves it unsent, and the
// next start delivers it. "fired" in `nudges list` therefore means delivered at least
// once (or given up because the decision was made meanwhile).

// pendingReminders are claimed reminder rows waiting for Nudge to deliver them.
type pendingReminders struct {
	mu   sync.Mutex
	rows map[string]core.Outgoing
}

func reminderKey(id int64, at time.Time) string {
	return fmt.Sprintf("%d@%s", id, at.UTC().Format(time.RFC3339Nano))
}

func (p *pendingReminders) put(k string, o core.Outgoing) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rows == nil {
		p.rows = map[string]core.Outgoing{}
	}
	p.rows[k] = o
}

func (p *pendingReminders) take(k string) (core.Outgoing, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.rows[k]
	delete(p.rows, k)
	return o, ok
}

// ClaimReminder claims occurrence scheduledAt of reminder n (advancing it to next) with the
// reminder's reply in the outbox, in one transaction. A reminder whose decision was made
// already is claimed without a reply. False means the occurrence was not ours to claim.
func (e *Engine) ClaimReminder(ctx context.Context, n core.Nudge, scheduledAt, firedAt, next time.Time) (bool, error) {
	rs := e.d.Store
	var out []core.Outgoing
	s, err := e.d.Store.Session(ctx, n.SessionID)
	if err != nil {
		return false, fmt.Errorf("claiming reminder %d: loading session: %w", n.ID, err)
	}
	t := &jobRun{e: e, j: &job{}, sess: s}
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return false, fmt.Errorf("claiming reminder %d: %w", n.ID, err)
	}
	if r, _, ok := reminder(s, cur, n, scheduledAt, e.d.Now()); ok {
		out = []core.Outgoing{t.row(t.address(r))}
	}
	claimed, err := rs.FireNudgeWith(ctx, n.ID, scheduledAt, firedAt, next, out)
	if err != nil || !claimed {
		return claimed, err
	}
	if len(out) == 1 {
		e.pending.put(reminderKey(n.ID, scheduledAt), out[0])
	}
	return true, nil
}

// deliverReminder sends reminder r of occurrence (n, scheduledAt): its claimed outbox row
// when there is one, else directly. A row whose decision was made meanwhile is dropped.
func (t *jobRun) deliverReminder(ctx context.Context, n core.Nudge, scheduledAt time.Time, r core.Reply, ok bool) error {
	row, claimed := t.e.pending.take(reminderKey(n.ID, scheduledAt))
	switch {
	case claimed && !ok:
		if err := t.e.d.Store.DropOutbox(ctx, row.ID, "decided before delivery"); err != nil {
			t.e.d.Log.Warn("dropping a moot reminder", "outbox", row.ID, "err", err)
		}
		return nil
	case claimed:
		_, err := t.e.deliver(ctx, &row)
		return err
	case ok:
		_, err := t.send(ctx, r)
		return err
	}
	return nil
}
