package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// All reads go to the read-only pool. Every *sql.Rows is closed before returning: an open
// result set would hold its WAL snapshot and keep that connection from seeing new commits.

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

const sessionCols = `id, channel, account, chat, thread, phase, auto_approve, owner, COALESCE(plan_id, ''),
	COALESCE(approval_id, ''), rejection_count, last_feedback, nudge_spec, question, injections, requesters, tokens, version, created_at, updated_at`

// Session returns the stored session id, or an error wrapping core.ErrNotFound.
func (s *Store) Session(ctx context.Context, id string) (core.Session, error) {
	se, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if err != nil {
		return core.Session{}, loadErr(fmt.Sprintf("loading session %q", id), err)
	}
	return se, nil
}

// loadErr wraps the error of a read by key with what, as core.ErrNotFound when there
// was no row.
func loadErr(what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) { // pgx.ErrNoRows wraps it too
		err = core.ErrNotFound
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Sessions returns every session, most recently updated first.
func (s *Store) Sessions(ctx context.Context) ([]core.Session, error) {
	return s.SessionsAfter(ctx, "", time.Time{}, "", 0)
}

// WaitingSessions are the sessions waiting for a person, a plan awaiting approval or a
// question asked, most recently updated first: the dashboard's, read through the partial
// index sessions_waiting (migration 0019), whatever the number of other sessions.
func (s *Store) WaitingSessions(ctx context.Context) ([]core.Session, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE phase = 'awaiting_approval' OR question IS NOT NULL ORDER BY updated_at DESC, id`)
	out, err := collect(rows, err, []core.Session{}, scanSession)
	if err != nil {
		return nil, fmt.Errorf("listing waiting sessions: %w", err)
	}
	return out, nil
}

// SessionsAfter is one page of Sessions' order (most recently updated first, ties by id):
// the sessions in phase ("" = every phase) that come after the session whose updated_at
// and id are updated and id (id "" = from the first), at most limit (0 = no limit). The
// page's end is a position in that order, not a count, so a session inserted meanwhile
// never shifts the next page.
func (s *Store) SessionsAfter(ctx context.Context, phase core.Phase, updated time.Time, id string, limit int) ([]core.Session, error) {
	var (
		where []string
		args  []any
	)
	if phase != "" {
		where = append(where, `phase = ?`)
		args = append(args, string(phase))
	}
	if id != "" {
		u := formatTime(updated)
		where = append(where, `(updated_at < ? OR (updated_at = ? AND id > ?))`)
		args = append(args, u, u, id)
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY updated_at DESC, id`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, []core.Session{}, scanSession) // never nil: callers encode lists as JSON arrays
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return out, nil
}

// collect appends every row of a query's rows (err is the query's own error) to out,
// read by scan, and closes rows.
func collect[T any](rows *sql.Rows, err error, out []T, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanSession reads one row of sessionCols; a bad stored value is an error naming the row.
func scanSession(sc scanner) (core.Session, error) {
	var (
		se               core.Session
		phase            string
		question, asked  sql.NullString
		tokens           sql.NullString
		inj, cr, updated string
	)
	if err := sc.Scan(&se.ID, &se.Address.Channel, &se.Address.Account, &se.Address.Chat, &se.Address.Thread,
		&phase, &se.AutoApprove, &se.Owner, &se.PlanID, &se.ApprovalID, &se.RejectionCount, &se.LastFeedback,
		&se.NudgeSpec, &question, &inj, &asked, &tokens, &se.Version, &cr, &updated); err != nil {
		return core.Session{}, err
	}
	se.Phase = core.Phase(phase)
	if !se.Phase.Valid() {
		return core.Session{}, fmt.Errorf("session %q: invalid phase %q", se.ID, phase)
	}
	var d decoder
	if question.Valid {
		se.Question = new(core.Question)
		d.json(question.String, "question", se.Question)
		se.Question.AskedAt = se.Question.AskedAt.UTC()
	}
	d.nullJSON(asked, "requesters", &se.Requesters)
	d.nullJSON(tokens, "tokens", &se.Tokens)
	if inj != "[]" { // the usual empty queue, as sessionJSON writes it, needs no decoding
		d.json(inj, "injections", &se.Injections)
	}
	if len(se.Injections) == 0 {
		se.Injections = nil
	}
	se.CreatedAt, se.UpdatedAt = d.time(cr, "created_at"), d.time(updated, "updated_at")
	if d.err != nil {
		return core.Session{}, fmt.Errorf("session %q: %w", se.ID, d.err)
	}
	return se, nil
}

// decoder reads the encoded columns of a row, keeping the first error.
type decoder struct{ err error }

// json decodes the JSON column called what into dst.
func (d *decoder) json(v, what string, dst any) {
	if d.err == nil {
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			d.err = fmt.Errorf("decoding %s: %w", what, err)
		}
	}
}

// nullJSON is json for a column where NULL means none.
func (d *decoder) nullJSON(v sql.NullString, what string, dst any) {
	if v.Valid {
		d.json(v.String, what, dst)
	}
}

// time parses the time column called what.
func (d *decoder) time(v, what string) time.Time {
	t, err := parseTime(v, what)
	if d.err == nil {
		d.err = err
	}
	return t
}

const planCols = `id, session_id, version, status, COALESCE(approval_id, ''), body, hash, file, decision,
	approvals, requesters, edited_by, run, prompt_tokens, cached_tokens, completion_tokens, model_calls, unreported_calls,
	created_at, updated_at`

// Plan returns the plan with the given id, or an error wrapping core.ErrNotFound.
func (s *Store) Plan(ctx context.Context, id string) (core.Plan, error) {
	p, err := scanPlan(s.r.QueryRowContext(ctx, `SELECT `+planCols+` FROM plans WHERE id = ?`, id))
	if err != nil {
		return core.Plan{}, loadErr(fmt.Sprintf("loading plan %q", id), err)
	}
	return p, nil
}

// PlanByApproval returns the plan version bound to approvalID, or an error wrapping
// core.ErrNotFound.
func (s *Store) PlanByApproval(ctx context.Context, approvalID string) (core.Plan, error) {
	if approvalID == "" {
		return core.Plan{}, fmt.Errorf("loading plan by approval id: empty id: %w", core.ErrNotFound)
	}
	p, err := scanPlan(s.r.QueryRowContext(ctx, `SELECT `+planCols+` FROM plans WHERE approval_id = ?`, approvalID))
	if err != nil {
		return core.Plan{}, loadErr(fmt.Sprintf("loading plan by approval id %q", approvalID), err)
	}
	return p, nil
}

// Plans lists the plans of a session by version, or of every session ("") oldest first.
func (s *Store) Plans(ctx context.Context, sessionID string) ([]core.Plan, error) {
	q, args := `SELECT `+planCols+` FROM plans ORDER BY created_at, session_id, version`, []any(nil)
	if sessionID != "" {
		q, args = `SELECT `+planCols+` FROM plans WHERE session_id = ? ORDER BY version`, []any{sessionID}
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, []core.Plan{}, scanPlan) // never nil: callers encode lists as JSON arrays
	if err != nil {
		return nil, fmt.Errorf("listing plans: %w", err)
	}
	return out, nil
}

func scanPlan(sc scanner) (core.Plan, error) {
	var (
		p                     core.Plan
		status, body, cr, upd string
		decision, approvals   sql.NullString
		asked, run            sql.NullString
	)
	if err := sc.Scan(&p.ID, &p.SessionID, &p.Version, &status, &p.ApprovalID, &body, &p.Hash, &p.File,
		&decision, &approvals, &asked, &p.EditedBy, &run, &p.Tokens.Prompt, &p.Tokens.Cached, &p.Tokens.Completion,
		&p.Tokens.Calls, &p.Tokens.Unreported, &cr, &upd); err != nil {
		return core.Plan{}, err
	}
	p.Status = core.PlanStatus(status)
	if !validPlanStatus(p.Status) {
		return core.Plan{}, fmt.Errorf("plan %q: invalid status %q", p.ID, status)
	}
	var d decoder
	d.json(body, "body", &p.Body)
	if decision.Valid {
		p.Decision = new(plan.Decision)
		d.json(decision.String, "decision", p.Decision)
		p.Decision.At = p.Decision.At.UTC()
	}
	d.nullJSON(approvals, "approvals", &p.Approvals)
	for i := range p.Approvals {
		p.Approvals[i].At = p.Approvals[i].At.UTC()
	}
	d.nullJSON(asked, "requesters", &p.Requesters)
	d.nullJSON(run, "run", &p.Run)
	if p.Run.Stop != nil {
		p.Run.Stop.At = p.Run.Stop.At.UTC()
	}
	p.CreatedAt, p.UpdatedAt = d.time(cr, "created_at"), d.time(upd, "updated_at")
	if d.err != nil {
		return core.Plan{}, fmt.Errorf("plan %q: %w", p.ID, d.err)
	}
	return p, nil
}

// Transcript returns the newest limit entries of a session, oldest first; limit <= 0
// returns them all. An unknown session has an empty transcript.
func (s *Store) Transcript(ctx context.Context, sessionID string, limit int) ([]core.ChatMessage, error) {
	if limit <= 0 {
		limit = math.MaxInt32 // no limit; the engines spell "no limit" differently
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, role, content, tool_calls, tool_call_id, name, at FROM (
			SELECT * FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT ?
		) AS newest ORDER BY id`, sessionID, limit)
	// never nil: callers encode lists as JSON arrays
	out, err := collect(rows, err, []core.ChatMessage{}, func(sc scanner) (m core.ChatMessage, err error) {
		var (
			id       int64
			role, at string
			calls    sql.NullString
		)
		if err := sc.Scan(&id, &role, &m.Content, &calls, &m.ToolCallID, &m.Name, &at); err != nil {
			return m, err
		}
		m.Role = core.Role(role)
		if calls.Valid {
			if err := json.Unmarshal([]byte(calls.String), &m.ToolCalls); err != nil {
				return m, fmt.Errorf("message %d: decoding tool calls: %w", id, err)
			}
		}
		if m.At, err = parseTime(at, "at"); err != nil {
			return m, fmt.Errorf("message %d: %w", id, err)
		}
		return m, nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading transcript of %q: %w", sessionID, err)
	}
	return out, nil
}

// Events returns the audit rows of a session, oldest first.
func (s *Store) Events(ctx context.Context, sessionID string) ([]core.Event, error) {
	return s.EventsAfter(ctx, sessionID, 0, 0)
}

// EventsAfter is one page of Events: the session's audit rows with an id above after,
// oldest first, at most limit (0 = no limit), read through the index plan_events_session.
func (s *Store) EventsAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error) {
	q := `SELECT id, session_id, plan_id, plan_version, kind, actor, channel,
		detail, at FROM plan_events WHERE session_id = ? AND id > ? ORDER BY id`
	args := []any{sessionID, after}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	// never nil: callers encode lists as JSON arrays
	out, err := collect(rows, err, []core.Event{}, func(sc scanner) (e core.Event, err error) {
		var kind, actor, at string
		if err := sc.Scan(&e.ID, &e.SessionID, &e.PlanID, &e.PlanVersion, &kind, &actor, &e.Channel,
			&e.Detail, &at); err != nil {
			return e, err
		}
		e.Kind = core.EventKind(kind)
		e.Actor = core.ParseActor(actor)
		if e.At, err = parseTime(at, "at"); err != nil {
			return e, fmt.Errorf("event %d: %w", e.ID, err)
		}
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading events of %q: %w", sessionID, err)
	}
	return out, nil
}
