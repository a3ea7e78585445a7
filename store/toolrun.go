package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// StartToolRun records that a mutating tool call is about to run, durably (fsynced before
// it returns), so that if the process or the machine dies while the call runs it is not
// run again. Recording the same call twice is core.ErrDuplicate: a call starts at most once.
func (s *Store) StartToolRun(ctx context.Context, r core.ToolRun) error {
	if r.SessionID == "" || r.CallID == "" || r.Tool == "" {
		return errors.New("recording tool run: session, call id and tool are required")
	}
	res, err := s.execWriter(ctx, `INSERT INTO tool_runs (session_id, call_id, tool, detail, started_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, r.SessionID, r.CallID, r.Tool, r.Detail, formatTime(stamp(r.StartedAt, s.now())))
	if err != nil {
		return fmt.Errorf("recording tool run %s/%s: %w", r.SessionID, r.CallID, explain(err))
	}
	if n, _ := res.RowsAffected(); n == 0 { // both drivers count without an error
		return fmt.Errorf("recording tool run %s/%s: %w", r.SessionID, r.CallID, core.ErrDuplicate)
	}
	return nil
}

// FinishToolRun records how a started call ended, durably like the start: were it lost, a
// resumed turn would report "effects unknown" for a finished call, the safe side.
func (s *Store) FinishToolRun(ctx context.Context, r core.ToolRun) error {
	if r.Outcome == "" {
		return fmt.Errorf("finishing tool run %s/%s: no outcome", r.SessionID, r.CallID)
	}
	res, err := s.execWriter(ctx, `UPDATE tool_runs SET finished_at = ?, outcome = ? WHERE session_id = ? AND call_id = ? AND finished_at IS NULL`,
		formatTime(stamp(r.FinishedAt, s.now())), string(r.Outcome), r.SessionID, r.CallID)
	if err != nil {
		return fmt.Errorf("finishing tool run %s/%s: %w", r.SessionID, r.CallID, explain(err))
	}
	if n, _ := res.RowsAffected(); n == 0 { // both drivers count without an error
		return fmt.Errorf("finishing tool run %s/%s: %w", r.SessionID, r.CallID, core.ErrNotFound)
	}
	return nil
}

// UnfinishedToolRuns lists the calls of a session that started and never finished (all
// sessions for ""), oldest first.
func (s *Store) UnfinishedToolRuns(ctx context.Context, sessionID string) ([]core.ToolRun, error) {
	return s.toolRuns(ctx, "listing unfinished tool runs", `WHERE finished_at IS NULL AND (? = '' OR session_id = ?)`, sessionID, sessionID)
}

// ToolRunsOf returns every recorded run of a session, oldest first.
func (s *Store) ToolRunsOf(ctx context.Context, sessionID string) ([]core.ToolRun, error) {
	return s.toolRuns(ctx, "listing tool runs", `WHERE session_id = ?`, sessionID)
}

// toolRuns lists the runs that where selects, oldest first; what names the listing.
func (s *Store) toolRuns(ctx context.Context, what, where string, args ...any) ([]core.ToolRun, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT session_id, call_id, tool, detail, started_at, finished_at, outcome FROM tool_runs
		`+where+` ORDER BY started_at, call_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return collect(rows, nil, nil, func(sc scanner) (r core.ToolRun, err error) {
		var started string
		var finished sql.NullString
		if err := sc.Scan(&r.SessionID, &r.CallID, &r.Tool, &r.Detail, &started, &finished, &r.Outcome); err != nil {
			return r, fmt.Errorf("%s: %w", what, err)
		}
		if r.StartedAt, err = parseTime(started, "tool run start"); err != nil {
			return r, err
		}
		if finished.Valid {
			r.FinishedAt, err = parseTime(finished.String, "tool run finish")
		}
		return r, err
	})
}

// PruneToolRuns deletes finished runs that started before olderThan and returns how many
// it removed; unfinished ones stay until a resume closes them.
func (s *Store) PruneToolRuns(ctx context.Context, olderThan time.Time) (int64, error) {
	res, err := s.execWriter(ctx, `DELETE FROM tool_runs WHERE finished_at IS NOT NULL AND started_at < ?`, formatTime(olderThan))
	if err != nil {
		return 0, fmt.Errorf("pruning tool runs: %w", explain(err))
	}
	return res.RowsAffected()
}
