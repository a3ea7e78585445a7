package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// Commit applies ch atomically on the writer connection: the inbound key, the session
// (insert at version 0, otherwise compare-and-set on the version), the plans, the audit
// events, the transcript messages and the nudge cancellation. Any failure rolls back
// everything ch wrote, and only that. Zero times are stamped with the commit time.
// Changes committed concurrently share one transaction (see write); Commit returns only
// when ch is durable (or, for a lazy change, written).
func (s *Store) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	sid, err := changeSession(ch)
	if err != nil {
		return core.Session{}, fmt.Errorf("committing change: %w", err)
	}
	out, err := s.commit(ctx, ch, sid)
	if err != nil {
		return core.Session{}, fmt.Errorf("committing change for session %q: %w", sid, err)
	}
	return out, nil
}

// changeSession names the session the change belongs to and checks that its parts agree.
func changeSession(ch core.Change) (string, error) {
	sid := ch.SessionID
	if ch.Session != nil {
		if ch.Session.ID == "" {
			return "", errors.New("session has no id")
		}
		if sid != "" && sid != ch.Session.ID {
			return "", fmt.Errorf("change names session %q but carries session %q", sid, ch.Session.ID)
		}
		sid = ch.Session.ID
	}
	if sid == "" && (len(ch.Messages) > 0 || ch.CancelNudges || ch.CancelReminders || len(ch.Nudges) > 0) {
		return "", errors.New("messages or nudge cancellation without a session id")
	}
	return sid, nil
}

func (s *Store) commit(ctx context.Context, ch core.Change, sid string) (core.Session, error) {
	var out core.Session
	err := s.write(ctx, ch.Lazy, func(ctx context.Context, tx *sql.Tx, now time.Time) error {
		var err error
		out, err = writeChange(ctx, tx, ch, sid, now)
		return err
	})
	if err != nil {
		return core.Session{}, err
	}
	return out, nil
}

// writeChange writes every part of ch inside tx.
func writeChange(ctx context.Context, tx *sql.Tx, ch core.Change, sid string, now time.Time) (core.Session, error) {
	var err error
	// The inbound key goes first: a duplicate event is the most useful thing to report,
	// whatever else in the change would have failed.
	if ch.Inbound != nil {
		if err := recordInbound(ctx, tx, *ch.Inbound, now); err != nil {
			return core.Session{}, err
		}
	}
	var out core.Session
	if ch.Session != nil {
		if out, err = writeSession(ctx, tx, *ch.Session, now); err != nil {
			return core.Session{}, err
		}
	}
	for _, p := range ch.Plans {
		if err := writePlan(ctx, tx, p, sid, now); err != nil {
			return core.Session{}, err
		}
	}
	for _, e := range ch.Events {
		if err := writeEvent(ctx, tx, e, sid, now); err != nil {
			return core.Session{}, err
		}
	}
	for _, m := range ch.Messages {
		if err := writeMessage(ctx, tx, m, sid, now); err != nil {
			return core.Session{}, err
		}
	}
	if ch.CancelNudges || ch.CancelReminders {
		q := `UPDATE nudges SET status = 'cancelled', next_fire_at = NULL WHERE session_id = ? AND status = 'active'`
		if !ch.CancelNudges {
			q += ` AND action = 'remind'`
		}
		if _, err := tx.ExecContext(ctx, q, sid); err != nil {
			return core.Session{}, fmt.Errorf("cancelling nudges: %w", err)
		}
	}
	for _, n := range ch.Nudges {
		if err := writeNudge(ctx, tx, n, sid, now); err != nil {
			return core.Session{}, err
		}
	}
	if err := writeOutbox(ctx, tx, ch.Outbox, sid, now); err != nil {
		return core.Session{}, err
	}
	return out, nil
}

// relaxSync switches the writer connection to synchronous=NORMAL for one lazy commit: in
// WAL mode the commit is then written but not fsynced, and the next FULL commit syncs it.
// The returned func restores FULL; if that fails the connection is discarded, so no later
// commit can run relaxed by accident.
func relaxSync(ctx context.Context, conn *sql.Conn) (func(), error) {
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return nil, fmt.Errorf("relaxing synchronous for a lazy commit: %w", err)
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = FULL"); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}

func recordInbound(ctx context.Context, tx *sql.Tx, k core.InboundKey, now time.Time) error {
	if k.EventID == "" {
		return errors.New("recording inbound event: empty event id")
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO inbound (channel, account, event_id, at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, k.Channel, k.Account, k.EventID, formatTime(now))
	if err != nil {
		return fmt.Errorf("recording inbound event %s/%s/%s: %w", k.Channel, k.Account, k.EventID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("recording inbound event: %w", err)
	} else if n == 0 {
		return fmt.Errorf("inbound event %s/%s/%s: %w", k.Channel, k.Account, k.EventID, core.ErrDuplicate)
	}
	return nil
}

// writeSession inserts (Version 0) or updates (compare-and-set on Version) the session
// row and returns the session as stored.
func writeSession(ctx context.Context, tx *sql.Tx, se core.Session, now time.Time) (core.Session, error) {
	if !se.Phase.Valid() {
		return core.Session{}, fmt.Errorf("saving session: invalid phase %q", se.Phase)
	}
	if se.RejectionCount < 0 {
		return core.Session{}, fmt.Errorf("saving session: negative rejection count %d", se.RejectionCount)
	}
	q, inj, err := sessionJSON(se)
	if err != nil {
		return core.Session{}, fmt.Errorf("saving session: %w", err)
	}
	updated := stamp(se.UpdatedAt, now)
	out := normalizeSession(se)
	out.UpdatedAt = updated

	if se.Version == 0 {
		created := stamp(se.CreatedAt, now)
		res, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, channel, account, chat, thread, phase,
			auto_approve, owner, plan_id, approval_id, rejection_count, last_feedback, nudge_spec, question, injections,
			version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (id) DO NOTHING`,
			se.ID, se.Address.Channel, se.Address.Account, se.Address.Chat, se.Address.Thread, string(se.Phase),
			se.AutoApprove, se.Owner, se.PlanID, se.ApprovalID, se.RejectionCount, se.LastFeedback, se.NudgeSpec, q, inj,
			formatTime(created), formatTime(updated))
		if err != nil {
			return core.Session{}, fmt.Errorf("inserting session: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return core.Session{}, fmt.Errorf("inserting session: %w", err)
		}
		if n == 0 {
			return core.Session{}, fmt.Errorf("inserting session: already exists: %w", core.ErrConflict)
		}
		out.Version, out.CreatedAt = 1, created
		return out, nil
	}

	// created_at and the address are immutable (the id is derived from the address): they
	// are never taken from the caller on update, and leaving the address out of the SET
	// list spares the address index a write on every commit.
	var version int64
	var created string
	err = tx.QueryRowContext(ctx, `UPDATE sessions SET
		phase = ?, auto_approve = ?, owner = ?, plan_id = NULLIF(?, ''), approval_id = NULLIF(?, ''),
		rejection_count = ?, last_feedback = ?, nudge_spec = ?, question = ?, injections = ?, version = version + 1,
		updated_at = ?
		WHERE id = ? AND version = ?
		RETURNING version, created_at`,
		string(se.Phase), se.AutoApprove, se.Owner, se.PlanID, se.ApprovalID, se.RejectionCount, se.LastFeedback, se.NudgeSpec, q, inj,
		formatTime(updated), se.ID, se.Version).Scan(&version, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Session{}, fmt.Errorf("updating session from version %d: %w", se.Version, core.ErrConflict)
	}
	if err != nil {
		return core.Session{}, fmt.Errorf("updating session: %w", err)
	}
	out.Version = version
	if out.CreatedAt, err = parseTime(created, "created_at"); err != nil {
		return core.Session{}, fmt.Errorf("updating session: %w", err)
	}
	return out, nil
}

// sessionJSON encodes the question (NULL when none) and the injection queue.
func sessionJSON(se core.Session) (q sql.NullString, inj string, err error) {
	if se.Question != nil {
		qq := *se.Question
		qq.AskedAt = qq.AskedAt.UTC()
		b, err := json.Marshal(qq)
		if err != nil {
			return q, "", fmt.Errorf("encoding question: %w", err)
		}
		q = sql.NullString{String: string(b), Valid: true}
	}
	injections := se.Injections
	if injections == nil {
		injections = []core.Injection{}
	}
	b, err := json.Marshal(injections)
	if err != nil {
		return q, "", fmt.Errorf("encoding injections: %w", err)
	}
	return q, string(b), nil
}

// normalizeSession returns se as it will read back: UTC times, no empty slices, and no
// memory shared with the caller's value.
func normalizeSession(se core.Session) core.Session {
	if se.Question != nil {
		q := *se.Question
		q.AskedAt = q.AskedAt.UTC()
		q.Options = append([]string(nil), q.Options...)
		if se.Question.Options != nil && len(q.Options) == 0 {
			q.Options = []string{} // JSON keeps [] distinct from null
		}
		se.Question = &q
	}
	if len(se.Injections) == 0 {
		se.Injections = nil
	} else {
		se.Injections = append([]core.Injection(nil), se.Injections...)
	}
	se.CreatedAt = se.CreatedAt.UTC()
	return se
}

func validPlanStatus(st core.PlanStatus) bool {
	switch st {
	case core.PlanPending, core.PlanSuperseded, core.PlanAccepted, core.PlanRevised,
		core.PlanAbandoned, core.PlanAborted, core.PlanExpired, core.PlanCompleted:
		return true
	}
	return false
}

// writePlan inserts or updates a plan by id. created_at is set once; a plan cannot move
// to another session.
func writePlan(ctx context.Context, tx *sql.Tx, p core.Plan, sid string, now time.Time) error {
	if p.ID == "" {
		return errors.New("saving plan: empty id")
	}
	switch {
	case p.SessionID == "":
		p.SessionID = sid
	case sid != "" && p.SessionID != sid:
		return fmt.Errorf("saving plan %s: it names session %q, the change %q", p.ID, p.SessionID, sid)
	}
	if p.SessionID == "" {
		return fmt.Errorf("saving plan %s: no session id", p.ID)
	}
	if !validPlanStatus(p.Status) {
		return fmt.Errorf("saving plan %s: invalid status %q", p.ID, p.Status)
	}
	body, err := json.Marshal(p.Body)
	if err != nil {
		return fmt.Errorf("saving plan %s: encoding body: %w", p.ID, err)
	}
	var decision sql.NullString
	if p.Decision != nil {
		d := *p.Decision
		d.At = d.At.UTC()
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("saving plan %s: encoding decision: %w", p.ID, err)
		}
		decision = sql.NullString{String: string(b), Valid: true}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO plans (id, session_id, version, status, approval_id, body,
		hash, file, decision, created_at, updated_at)
		VALUES (?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, status = excluded.status,
			approval_id = excluded.approval_id, body = excluded.body, hash = excluded.hash,
			file = excluded.file, decision = excluded.decision, updated_at = excluded.updated_at
		WHERE plans.session_id = excluded.session_id`,
		p.ID, p.SessionID, p.Version, string(p.Status), p.ApprovalID, string(body), p.Hash, p.File, decision,
		formatTime(stamp(p.CreatedAt, now)), formatTime(stamp(p.UpdatedAt, now)))
	if err != nil {
		return fmt.Errorf("saving plan %s: %w", p.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("saving plan %s: %w", p.ID, err)
	} else if n == 0 {
		return fmt.Errorf("saving plan %s: it belongs to another session than %q", p.ID, p.SessionID)
	}
	return nil
}

// writeEvent appends an audit row; the row id is assigned by the database.
func writeEvent(ctx context.Context, tx *sql.Tx, e core.Event, sid string, now time.Time) error {
	switch {
	case e.SessionID == "":
		e.SessionID = sid
	case sid != "" && e.SessionID != sid:
		return fmt.Errorf("saving event %s: it names session %q, the change %q", e.Kind, e.SessionID, sid)
	}
	if e.SessionID == "" {
		return fmt.Errorf("saving event %s: no session id", e.Kind)
	}
	if e.Kind == "" {
		return errors.New("saving event: empty kind")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO plan_events (session_id, plan_id, plan_version, kind, actor,
		channel, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.SessionID, e.PlanID, e.PlanVersion, string(e.Kind), e.Actor.String(), e.Channel, e.Detail,
		formatTime(stamp(e.At, now))); err != nil {
		return fmt.Errorf("saving event %s: %w", e.Kind, err)
	}
	return nil
}

// writeMessage appends a transcript entry.
func writeMessage(ctx context.Context, tx *sql.Tx, m core.ChatMessage, sid string, now time.Time) error {
	var calls sql.NullString
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return fmt.Errorf("saving %s message: encoding tool calls: %w", m.Role, err)
		}
		calls = sql.NullString{String: string(b), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id,
		name, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sid, string(m.Role), m.Content, calls, m.ToolCallID, m.Name, formatTime(stamp(m.At, now))); err != nil {
		return fmt.Errorf("saving %s message: %w", m.Role, err)
	}
	return nil
}
