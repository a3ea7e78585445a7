package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

const nudgeCols = `id, session_id, plan_id, kind, action, spec, next_fire_at, fired, missed, status, created_at`

// nudgeStep adds a schedule to the session of the change.
func nudgeStep(n core.Nudge, sid string, now time.Time) (step, error) {
	if n.SessionID != "" && n.SessionID != sid {
		return step{}, fmt.Errorf("saving nudge: it names session %q inside a change for %q", n.SessionID, sid)
	}
	switch {
	case n.Kind != core.NudgeOnce && n.Kind != core.NudgeRecurring:
		return step{}, fmt.Errorf("saving nudge: invalid kind %q", n.Kind)
	case n.Action != core.NudgeRemind && n.Action != core.NudgeExpire:
		return step{}, fmt.Errorf("saving nudge: invalid action %q", n.Action)
	case n.Spec == "":
		return step{}, fmt.Errorf("saving nudge: empty spec")
	}
	status := n.Status
	if status == "" {
		status = core.NudgeActive
	}
	var next sql.NullString
	if !n.NextFireAt.IsZero() {
		next = sql.NullString{String: formatTime(n.NextFireAt), Valid: true}
	}
	return step{
		what: "saving nudge",
		q: `INSERT INTO nudges (session_id, plan_id, kind, action, spec, next_fire_at,
		fired, missed, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		args: []any{sid, n.PlanID, string(n.Kind), string(n.Action), n.Spec, next, n.Fired, n.Missed, string(status),
			formatTime(stamp(n.CreatedAt, now))},
	}, nil
}

// Nudges lists the schedules of a session ("" = every session): active ones first, by
// next fire time, then the rest newest first.
func (s *Store) Nudges(ctx context.Context, sessionID string) ([]core.Nudge, error) {
	q := `SELECT ` + nudgeCols + ` FROM nudges`
	var args []any
	if sessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, sessionID)
	}
	q += ` ORDER BY status <> 'active', next_fire_at IS NULL, next_fire_at, id DESC`
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, []core.Nudge{}, scanNudge)
	if err != nil {
		return nil, fmt.Errorf("listing nudges: %w", err)
	}
	return out, nil
}

func scanNudge(sc scanner) (core.Nudge, error) {
	var (
		n                        core.Nudge
		kind, action, status, cr string
		next                     sql.NullString
	)
	if err := sc.Scan(&n.ID, &n.SessionID, &n.PlanID, &kind, &action, &n.Spec, &next, &n.Fired, &n.Missed, &status, &cr); err != nil {
		return core.Nudge{}, err
	}
	n.Kind, n.Action, n.Status = core.NudgeKind(kind), core.NudgeAction(action), core.NudgeStatus(status)
	var d decoder
	if next.Valid {
		n.NextFireAt = d.time(next.String, "next_fire_at")
	}
	n.CreatedAt = d.time(cr, "created_at")
	if d.err != nil {
		return core.Nudge{}, fmt.Errorf("nudge %d: %w", n.ID, d.err)
	}
	return n, nil
}
