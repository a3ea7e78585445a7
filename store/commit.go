package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Commit applies ch in one transaction (on SQLite an IMMEDIATE one on the writer
// connection; on PostgreSQL see postgres.go for the locking): the inbound
// key, the session (insert at version 0, otherwise compare-and-set on the version), the
// plans, the audit events, the transcript messages and the nudge cancellation. Any
// failure rolls back everything. Zero times are stamped with the commit time.
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
	now := s.now().UTC()
	steps, out, err := changeSteps(ch, sid, now, s.pool == nil)
	if err != nil {
		// A replayed event is reported as such even when the change is invalid.
		if ch.Inbound != nil {
			if seen, serr := s.SeenInbound(ctx, *ch.Inbound); serr == nil && seen {
				return core.Session{}, inboundDuplicate(*ch.Inbound)
			}
		}
		return core.Session{}, err
	}
	start := time.Now()
	if err := s.runSteps(ctx, steps, ch.Lazy); err != nil {
		return core.Session{}, err
	}
	if s.onCommit != nil {
		s.onCommit(!ch.Lazy, time.Since(start))
	}
	if out == nil {
		return core.Session{}, nil
	}
	return *out, nil
}

// changeSteps builds the statements of ch in order: the inbound key first (a duplicate
// event is the most useful thing to report, whatever else would have failed), the
// session, plans, events, messages, the nudge cancellation, new nudges and the outbox.
// out is filled in as the session is stored. sqlite: see planStep and outboxSteps.
func changeSteps(ch core.Change, sid string, now time.Time, sqlite bool) (steps []step, out *core.Session, err error) {
	add := func(st step, e error) { // keeps the first error
		if err == nil {
			steps, err = append(steps, st), e
		}
	}
	if ch.Inbound != nil {
		add(inboundStep(*ch.Inbound, now))
	}
	if ch.Session != nil && err == nil {
		var st step
		st, out, err = sessionStep(*ch.Session, now)
		steps = append(steps, st)
	}
	for _, p := range ch.Plans {
		add(planStep(p, sid, now, sqlite))
	}
	if pt := ch.PlanTokens; pt != nil {
		add(planTokensStep(*pt, sid))
	}
	for _, e := range ch.Events {
		add(eventStep(e, sid, now))
	}
	for _, m := range ch.Messages {
		add(messageStep(m, sid, now))
	}
	if ch.CancelNudges || ch.CancelReminders {
		q := `UPDATE nudges SET status = 'cancelled', next_fire_at = NULL WHERE session_id = ? AND status = 'active'`
		if !ch.CancelNudges {
			q += ` AND action = 'remind'`
		}
		steps = append(steps, step{what: "cancelling nudges", q: q, args: []any{sid}})
	}
	for _, n := range ch.Nudges {
		add(nudgeStep(n, sid, now))
	}
	if err != nil {
		return nil, nil, err
	}
	more, err := outboxSteps(ch.Outbox, sid, now, sqlite)
	if err != nil {
		return nil, nil, err
	}
	return append(steps, more...), out, nil
}

// execWriter runs one statement on the writer outside the group commit (tool runs,
// pruning), durably: on SQLite the statement commits at synchronous=NORMAL like every
// writer transaction, and then waits for an fsync of the WAL begun after it returned
// (walsync.go). Once an fsync failed, it fails without running.
func (s *Store) execWriter(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, _, err := s.execTimed(ctx, q, args...)
	return res, err
}

// execTimed is execWriter that also says how long the statement ran on the writer (on
// SQLite the fsync after it is shared and does not hold the writer).
func (s *Store) execTimed(ctx context.Context, q string, args ...any) (sql.Result, time.Duration, error) {
	if s.pool == nil {
		if err := s.ws.failed(); err != nil {
			return nil, 0, err
		}
	}
	start := time.Now()
	res, err := s.w.ExecContext(ctx, q, args...)
	held := time.Since(start)
	if err != nil || s.pool != nil {
		return res, held, err
	}
	if err := s.ws.wait(s.ws.ticket()); err != nil {
		return nil, held, err
	}
	return res, held, nil
}

func inboundStep(k core.InboundKey, now time.Time) (step, error) {
	if k.EventID == "" {
		return step{}, errors.New("recording inbound event: empty event id")
	}
	return step{
		what: "recording inbound event " + k.Channel + "/" + k.Account + "/" + k.EventID,
		q: `INSERT INTO inbound (channel, account, event_id, at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`,
		args: []any{k.Channel, k.Account, k.EventID, formatTime(now)},
		none: inboundDuplicate(k),
	}, nil
}

// inboundDuplicate is the error of an event recorded already. Every commit with a key
// carries one (its step's none), so it is formatted only when read.
func inboundDuplicate(k core.InboundKey) error { return duplicateError{k} }

type duplicateError struct{ k core.InboundKey }

func (e duplicateError) Error() string {
	return "inbound event " + e.k.Channel + "/" + e.k.Account + "/" + e.k.EventID + ": " + core.ErrDuplicate.Error()
}

func (e duplicateError) Unwrap() error { return core.ErrDuplicate }

// conflictError is a lost compare-and-set on the session row, formatted only when read
// (every session update carries one).
type conflictError struct{ from int64 }

func (e conflictError) Error() string {
	return "updating session from version " + strconv.FormatInt(e.from, 10) + ": " + core.ErrConflict.Error()
}

func (e conflictError) Unwrap() error { return core.ErrConflict }

// sessionStep inserts (Version 0) or updates (compare-and-set on Version) the session
// row; out is the session as stored once the step ran.
func sessionStep(se core.Session, now time.Time) (st step, out *core.Session, err error) {
	if !se.Phase.Valid() {
		return step{}, nil, fmt.Errorf("saving session: invalid phase %q", se.Phase)
	}
	if se.RejectionCount < 0 {
		return step{}, nil, fmt.Errorf("saving session: negative rejection count %d", se.RejectionCount)
	}
	q, inj, err := sessionJSON(se)
	if err != nil {
		return step{}, nil, fmt.Errorf("saving session: %w", err)
	}
	asked, err := requestersJSON(se.Requesters)
	if err != nil {
		return step{}, nil, fmt.Errorf("saving session: %w", err)
	}
	var tokens sql.NullString
	if !se.Tokens.IsZero() {
		if tokens, err = jsonText(se.Tokens, "tokens"); err != nil {
			return step{}, nil, fmt.Errorf("saving session: %w", err)
		}
	}
	updated := stamp(se.UpdatedAt, now)
	stored := normalizeSession(se)
	stored.UpdatedAt = updated
	out = &stored

	if se.Version == 0 {
		created := stamp(se.CreatedAt, now)
		stored.Version, stored.CreatedAt = 1, created
		return step{
			what: "inserting session",
			q: `INSERT INTO sessions (id, channel, account, chat, thread, phase,
			auto_approve, owner, plan_id, approval_id, rejection_count, last_feedback, nudge_spec, question, injections,
			requesters, tokens, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (id) DO NOTHING`,
			args: []any{se.ID, se.Address.Channel, se.Address.Account, se.Address.Chat, se.Address.Thread, string(se.Phase),
				se.AutoApprove, se.Owner, se.PlanID, se.ApprovalID, se.RejectionCount, se.LastFeedback, se.NudgeSpec, q, inj,
				asked, tokens, formatTime(created), formatTime(updated)},
			none: fmt.Errorf("inserting session: already exists: %w", core.ErrConflict),
		}, out, nil
	}

	// created_at and the address are immutable (the id is derived from the address): they
	// are never taken from the caller on update, and leaving the address out of the SET
	// list spares the address index a write on every commit.
	var created string
	return step{
		what: "updating session",
		q: `UPDATE sessions SET
		phase = ?, auto_approve = ?, owner = ?, plan_id = NULLIF(?, ''), approval_id = NULLIF(?, ''),
		rejection_count = ?, last_feedback = ?, nudge_spec = ?, question = ?, injections = ?, requesters = ?, tokens = ?, version = version + 1,
		updated_at = ?
		WHERE id = ? AND version = ?
		RETURNING version, created_at`,
		args: []any{string(se.Phase), se.AutoApprove, se.Owner, se.PlanID, se.ApprovalID, se.RejectionCount, se.LastFeedback,
			se.NudgeSpec, q, inj, asked, tokens, formatTime(updated), se.ID, se.Version},
		none: conflictError{se.Version},
		dest: []any{&stored.Version, &created},
		then: func() (err error) {
			if stored.CreatedAt, err = parseTime(created, "created_at"); err != nil {
				return fmt.Errorf("updating session: %w", err)
			}
			return nil
		},
	}, out, nil
}

// sessionJSON encodes the question (NULL when none) and the injection queue.
func sessionJSON(se core.Session) (q sql.NullString, inj string, err error) {
	if se.Question != nil {
		qq := *se.Question
		qq.AskedAt = qq.AskedAt.UTC()
		if q, err = jsonText(qq, "question"); err != nil {
			return q, "", err
		}
	}
	if len(se.Injections) == 0 {
		return q, "[]", nil // what encoding/json writes for an empty queue, the usual one
	}
	b, err := json.Marshal(se.Injections)
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

// planStep inserts or updates a plan by id. created_at is set once; a plan cannot move
// to another session.
//
// With inPlace (SQLite) it first tries an UPDATE of the row as a decision or a step's
// progress leaves it (same session, version and approval id, out of its SET list):
// SQLite rewrites every index on a column an UPDATE sets, changed or not, and the upsert
// sets version and approval_id, both in unique indexes. Only when no such row exists does
// the upsert run, with its checks.
func planStep(p core.Plan, sid string, now time.Time, inPlace bool) (step, error) {
	if p.ID == "" {
		return step{}, errors.New("saving plan: empty id")
	}
	switch {
	case p.SessionID == "":
		p.SessionID = sid
	case sid != "" && p.SessionID != sid:
		return step{}, fmt.Errorf("saving plan %s: it names session %q, the change %q", p.ID, p.SessionID, sid)
	}
	if p.SessionID == "" {
		return step{}, fmt.Errorf("saving plan %s: no session id", p.ID)
	}
	if !validPlanStatus(p.Status) {
		return step{}, fmt.Errorf("saving plan %s: invalid status %q", p.ID, p.Status)
	}
	body, err := json.Marshal(p.Body)
	if err != nil {
		return step{}, fmt.Errorf("saving plan %s: encoding body: %w", p.ID, err)
	}
	var decision, approvals, asked, run sql.NullString
	if p.Decision != nil {
		d := *p.Decision
		d.At = d.At.UTC()
		decision, err = jsonText(d, "decision")
	}
	if err == nil {
		approvals, err = approvalsJSON(p.Approvals)
	}
	if err == nil {
		asked, err = requestersJSON(p.Requesters)
	}
	if err == nil && !p.Run.IsZero() {
		run, err = jsonText(p.Run, "run")
	}
	if err != nil {
		return step{}, fmt.Errorf("saving plan %s: %w", p.ID, err)
	}
	upsert := step{
		what: "saving plan " + p.ID,
		q: `INSERT INTO plans (id, session_id, version, status, approval_id, body,
		hash, file, decision, approvals, requesters, edited_by, run, created_at, updated_at)
		VALUES (?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, status = excluded.status,
			approval_id = excluded.approval_id, body = excluded.body, hash = excluded.hash,
			file = excluded.file, decision = excluded.decision, approvals = excluded.approvals,
			requesters = excluded.requesters, edited_by = excluded.edited_by, run = excluded.run,
			updated_at = excluded.updated_at
		WHERE plans.session_id = excluded.session_id`,
		args: []any{p.ID, p.SessionID, p.Version, string(p.Status), p.ApprovalID, string(body), p.Hash, p.File, decision,
			approvals, asked, p.EditedBy, run, formatTime(stamp(p.CreatedAt, now)), formatTime(stamp(p.UpdatedAt, now))},
		none: fmt.Errorf("saving plan %s: it belongs to another session than %q", p.ID, p.SessionID),
	}
	if !inPlace {
		return upsert, nil
	}
	return step{
		what: "updating plan " + p.ID,
		q: `UPDATE plans SET status = ?, body = ?, hash = ?, file = ?, decision = ?, approvals = ?,
			requesters = ?, edited_by = ?, run = ?, updated_at = ?
		WHERE id = ? AND session_id = ? AND version = ? AND approval_id IS NULLIF(?, '')`,
		args: []any{string(p.Status), string(body), p.Hash, p.File, decision, approvals, asked, p.EditedBy, run,
			formatTime(stamp(p.UpdatedAt, now)), p.ID, p.SessionID, p.Version, p.ApprovalID},
		orElse: &upsert,
	}, nil
}

// planTokensStep adds to a plan version's token counts in place: the plan's row written
// by this change or another keeps them (planStep never writes these columns).
func planTokensStep(pt core.PlanTokens, sid string) (step, error) {
	if pt.PlanID == "" || sid == "" {
		return step{}, errors.New("counting tokens: no plan or session id")
	}
	a := pt.Add
	return step{
		what: "counting tokens on plan " + pt.PlanID,
		q: `UPDATE plans SET prompt_tokens = prompt_tokens + ?, cached_tokens = cached_tokens + ?,
			completion_tokens = completion_tokens + ?, model_calls = model_calls + ?, unreported_calls = unreported_calls + ?
		WHERE id = ? AND session_id = ?`,
		args: []any{a.Prompt, a.Cached, a.Completion, a.Calls, a.Unreported, pt.PlanID, sid},
		none: fmt.Errorf("counting tokens: session %q has no plan %s", sid, pt.PlanID),
	}, nil
}

// requestersJSON encodes a session's or plan's requesters, NULL when there are none.
func requestersJSON(list []core.Requester) (sql.NullString, error) {
	if len(list) == 0 {
		return sql.NullString{}, nil
	}
	return jsonText(list, "requesters")
}

// jsonText encodes v for a nullable JSON column; what names it in the error.
func jsonText(v any, what string) (sql.NullString, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encoding %s: %w", what, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// approvalsJSON encodes a plan's recorded approvals, NULL while there are none.
func approvalsJSON(list []plan.Approval) (sql.NullString, error) {
	if len(list) == 0 {
		return sql.NullString{}, nil
	}
	out := make([]plan.Approval, len(list))
	for i, a := range list {
		a.At = a.At.UTC()
		out[i] = a
	}
	return jsonText(out, "approvals")
}

// eventStep appends an audit row; the row id is assigned by the database.
func eventStep(e core.Event, sid string, now time.Time) (step, error) {
	switch {
	case e.SessionID == "":
		e.SessionID = sid
	case sid != "" && e.SessionID != sid:
		return step{}, fmt.Errorf("saving event %s: it names session %q, the change %q", e.Kind, e.SessionID, sid)
	}
	if e.SessionID == "" {
		return step{}, fmt.Errorf("saving event %s: no session id", e.Kind)
	}
	if e.Kind == "" {
		return step{}, errors.New("saving event: empty kind")
	}
	return step{
		what: "saving event " + string(e.Kind),
		q: `INSERT INTO plan_events (session_id, plan_id, plan_version, kind, actor,
		channel, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		args: []any{e.SessionID, e.PlanID, e.PlanVersion, string(e.Kind), e.Actor.String(), e.Channel, e.Detail,
			formatTime(stamp(e.At, now))},
	}, nil
}

// messageStep appends a transcript entry.
func messageStep(m core.ChatMessage, sid string, now time.Time) (step, error) {
	var calls sql.NullString
	if len(m.ToolCalls) > 0 {
		var err error
		if calls, err = jsonText(m.ToolCalls, "tool calls"); err != nil {
			return step{}, fmt.Errorf("saving %s message: %w", m.Role, err)
		}
	}
	return step{
		what: "saving " + string(m.Role) + " message",
		q: `INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id,
		name, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		args: []any{sid, string(m.Role), m.Content, calls, m.ToolCallID, m.Name, formatTime(stamp(m.At, now))},
	}, nil
}
