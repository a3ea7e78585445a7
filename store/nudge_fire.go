package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// Outcomes of one occurrence in the firing ledger (nudge_firings.outcome).
const (
	NudgeFired  = "fired"  // the nudge was handed to the engine for delivery
	NudgeMissed = "missed" // it was due while plangate was down and too late to deliver
)

// ActiveNudges lists every active schedule that still has a next fire time, soonest first:
// what the nudge scheduler loads at start-up.
func (s *Store) ActiveNudges(ctx context.Context) ([]core.Nudge, error) {
	const where = ` FROM nudges WHERE status = 'active' AND next_fire_at IS NOT NULL`
	// Sizing the result first halves the load time of 100,000 schedules, which would
	// otherwise mostly be spent copying a growing slice. The count is only a hint.
	var count int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*)`+where).Scan(&count); err != nil {
		return nil, fmt.Errorf("counting active nudges: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+nudgeCols+where+` ORDER BY next_fire_at, id`)
	out, err := collect(rows, err, make([]core.Nudge, 0, count), scanNudge)
	if err != nil {
		return nil, fmt.Errorf("listing active nudges: %w", err)
	}
	return out, nil
}

// FireNudge claims one occurrence of schedule id in one writer transaction: it records
// (id, scheduledAt) in the firing ledger with the outcome, counts it as fired or missed,
// and advances the schedule to next (zero: done). It returns false, changing nothing,
// when the occurrence is not this caller's: the schedule was cancelled, finished,
// deleted or advanced past scheduledAt, or the ledger has the occurrence. The schedule
// must be active with next_fire_at at or before scheduledAt ("at or before" lets a
// recurring schedule that was down for several occurrences claim only the latest).
func (s *Store) FireNudge(ctx context.Context, id int64, scheduledAt time.Time, outcome string, firedAt, next time.Time) (bool, error) {
	return s.fireNudge(ctx, id, scheduledAt, outcome, firedAt, next, nil)
}

// FireNudgeWith is FireNudge for a fired occurrence whose reply goes into the outbox in the
// same transaction (ids assigned in place): fired then means delivered at least once.
func (s *Store) FireNudgeWith(ctx context.Context, id int64, scheduledAt time.Time, firedAt, next time.Time, out []core.Outgoing) (bool, error) {
	return s.fireNudge(ctx, id, scheduledAt, NudgeFired, firedAt, next, out)
}

func checkFiring(scheduledAt time.Time, outcome string, next time.Time) error {
	switch {
	case outcome != NudgeFired && outcome != NudgeMissed:
		return fmt.Errorf("invalid outcome %q", outcome)
	case scheduledAt.IsZero():
		return errors.New("no scheduled time")
	case !next.IsZero() && !next.After(scheduledAt):
		// The same occurrence could then be claimed again.
		return fmt.Errorf("next fire time %s is not after the occurrence", formatTime(next))
	}
	return nil
}

func (s *Store) fireNudge(ctx context.Context, id int64, scheduledAt time.Time, outcome string, firedAt, next time.Time, out []core.Outgoing) (bool, error) {
	if err := checkFiring(scheduledAt, outcome, next); err != nil {
		return false, fmt.Errorf("firing nudge %d: %w", id, err)
	}
	fired, missed, status := 1, 0, string(core.NudgeActive)
	if outcome == NudgeMissed {
		fired, missed = 0, 1
	}
	var nextCol sql.NullString
	if next.IsZero() {
		status = string(core.NudgeDone)
	} else {
		nextCol = sql.NullString{String: formatTime(next), Valid: true}
	}
	recorded := s.now().UTC()
	var firedCol sql.NullString
	if outcome == NudgeFired {
		firedCol = sql.NullString{String: formatTime(stamp(firedAt, recorded)), Valid: true}
	}
	steps := []step{{
		// Fixed-width UTC text compares like the times it holds.
		what: "advancing schedule",
		q: `UPDATE nudges SET next_fire_at = ?, status = ?, fired = fired + ?, missed = missed + ?
		WHERE id = ? AND status = 'active' AND next_fire_at IS NOT NULL AND next_fire_at <= ?`,
		args: []any{nextCol, status, fired, missed, id, formatTime(scheduledAt)},
		none: errUnchanged,
	}, {
		// Already in the ledger: the rollback undoes the update.
		what: "recording the occurrence",
		q: `INSERT INTO nudge_firings (nudge_id, scheduled_at, fired_at, outcome, recorded_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		args: []any{id, formatTime(scheduledAt), firedCol, outcome, formatTime(recorded)},
		none: errUnchanged,
	}}
	more, err := outboxSteps(out, "", recorded, s.pool == nil)
	if err == nil {
		err = s.runSteps(ctx, append(steps, more...), false)
	}
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("firing nudge %d at %s: %w", id, formatTime(scheduledAt), err)
	}
	return true, nil
}

// NudgeFiring is one row of the firing ledger.
type NudgeFiring struct {
	NudgeID     int64
	ScheduledAt time.Time
	FiredAt     time.Time // zero for a missed occurrence
	Outcome     string    // NudgeFired or NudgeMissed
	RecordedAt  time.Time
}

// NudgeFirings lists the ledger of schedule id (every schedule for 0), in scheduled order.
func (s *Store) NudgeFirings(ctx context.Context, id int64) ([]NudgeFiring, error) {
	q := `SELECT nudge_id, scheduled_at, fired_at, outcome, recorded_at FROM nudge_firings`
	var args []any
	if id != 0 {
		q += ` WHERE nudge_id = ?`
		args = append(args, id)
	}
	q += ` ORDER BY nudge_id, scheduled_at`
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, []NudgeFiring{}, func(sc scanner) (f NudgeFiring, err error) {
		var sched, recorded string
		var firedAt sql.NullString
		if err := sc.Scan(&f.NudgeID, &sched, &firedAt, &f.Outcome, &recorded); err != nil {
			return f, err
		}
		var d decoder
		f.ScheduledAt = d.time(sched, "scheduled_at")
		if firedAt.Valid {
			f.FiredAt = d.time(firedAt.String, "fired_at")
		}
		f.RecordedAt = d.time(recorded, "recorded_at")
		return f, d.err
	})
	if err != nil {
		return nil, fmt.Errorf("listing nudge firings: %w", err)
	}
	return out, nil
}
