package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
)

// outboxSteps insert the change's replies and write their ids back into the caller's
// slice: PostgreSQL reads the id back with RETURNING, SQLite (lastID) takes the rowid of
// an Exec, cheaper than a query whose row database/sql reads through a Rows of its own.
func outboxSteps(out []core.Outgoing, sid string, now time.Time, lastID bool) ([]step, error) {
	steps := make([]step, 0, len(out))
	for i := range out {
		o := &out[i]
		b, err := json.Marshal(o.Reply)
		if err != nil {
			return nil, fmt.Errorf("saving reply to the outbox: encoding: %w", err)
		}
		session := o.SessionID
		if session == "" {
			session = sid
		}
		st := step{
			what: "saving reply to the outbox",
			q:    `INSERT INTO outbox (session_id, channel, reply, created_at, owner) VALUES (?, ?, ?, ?, ?)`,
			args: []any{session, o.Reply.To.Channel, string(b), formatTime(stamp(o.CreatedAt, now)), o.Owner},
			then: func() error { o.SessionID = session; return nil },
		}
		if lastID {
			st.lastID = &o.ID
		} else {
			st.q += ` RETURNING id`
			st.dest = []any{&o.ID}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// UnsentOutbox lists undelivered, not dropped replies for the given channels (all for
// none), oldest first, at most limit (0 = no limit).
func (s *Store) UnsentOutbox(ctx context.Context, channels []string, limit int) ([]core.Outgoing, error) {
	q, args := unsentQuery(channels, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	return scanOutbox(rows, err, "unsent")
}

// unsentQuery is UnsentOutbox's query, run on both drivers through the partial index
// outbox_unsent: the few undelivered replies by id, filtered on the channel.
func unsentQuery(channels []string, limit int) (string, []any) {
	q := `SELECT id, session_id, reply, created_at, attempts, owner FROM outbox WHERE sent_at IS NULL AND dropped = ''`
	args := make([]any, 0, len(channels)+1)
	if len(channels) > 0 {
		q += ` AND channel IN (?` + strings.Repeat(`, ?`, len(channels)-1) + `)`
		for _, c := range channels {
			args = append(args, c)
		}
	}
	q += ` ORDER BY id`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	return q, args
}

// markSentQuery marks an outbox row sent, unless it was sent or dropped already.
const markSentQuery = `UPDATE outbox SET sent_at = ?, platform_id = ?, attempts = attempts + 1 WHERE id = ? AND sent_at IS NULL AND dropped = ''`

// MarkSent records that reply id reached its platform as message platformID, as a lazy
// commit: only an OS crash can lose it, and then the reply is sent again, never lost.
func (s *Store) MarkSent(ctx context.Context, id int64, platformID string, at time.Time) error {
	return s.updateOutbox(ctx, id, markSentQuery, formatTime(at), platformID, id)
}

// DropOutbox gives up on reply id (too old, or refused by the platform for good) and
// records why; it is never sent afterwards.
func (s *Store) DropOutbox(ctx context.Context, id int64, why string) error {
	if why == "" {
		why = "dropped"
	}
	return s.updateOutbox(ctx, id, `UPDATE outbox SET dropped = ?, attempts = attempts + 1 WHERE id = ? AND sent_at IS NULL AND dropped = ''`, why, id)
}

// ClaimOutbox counts a delivery attempt of reply id before it is sent, only while the row
// is unsent and still has the attempts it was listed with: of two processes delivering
// the same left-over row, one gets it (true). The claim is lazy: a kill before the send
// only leaves the row for the next delivery with one attempt more.
func (s *Store) ClaimOutbox(ctx context.Context, id int64, attempts int) (bool, error) {
	ok, err := s.changed(ctx, true, step{what: "claiming", q: `UPDATE outbox SET attempts = attempts + 1
		WHERE id = ? AND sent_at IS NULL AND dropped = '' AND attempts = ?`, args: []any{id, attempts}})
	if err != nil {
		return false, fmt.Errorf("claiming outbox reply %d: %w", id, explain(err))
	}
	return ok, nil
}

// NoteOutboxAttempt counts a failed delivery attempt of reply id.
func (s *Store) NoteOutboxAttempt(ctx context.Context, id int64) error {
	return s.updateOutbox(ctx, id, `UPDATE outbox SET attempts = attempts + 1 WHERE id = ? AND sent_at IS NULL`, id)
}

// updateOutbox runs one bookkeeping statement as a lazy commit.
func (s *Store) updateOutbox(ctx context.Context, id int64, q string, args ...any) error {
	if err := s.runSteps(ctx, []step{{what: "updating", q: q, args: args}}, true); err != nil {
		return fmt.Errorf("updating outbox reply %d: %w", id, explain(err))
	}
	return nil
}

// PruneOutbox deletes sent or dropped replies created before olderThan and returns how
// many it removed.
func (s *Store) PruneOutbox(ctx context.Context, olderThan time.Time) (int64, error) {
	res, err := s.execWriter(ctx, `DELETE FROM outbox WHERE (sent_at IS NOT NULL OR dropped != '') AND created_at < ?`, formatTime(olderThan))
	if err != nil {
		return 0, fmt.Errorf("pruning the outbox: %w", err)
	}
	return res.RowsAffected()
}

// DroppedOutbox lists the replies that were given up, newest first, with an id below
// before (0 = from the newest), at most limit (0 = no limit), each with why
// (Outgoing.Dropped), through the partial index outbox_dropped.
func (s *Store) DroppedOutbox(ctx context.Context, before int64, limit int) ([]core.Outgoing, error) {
	q := `SELECT id, session_id, reply, created_at, attempts, owner, dropped FROM outbox WHERE dropped != ''`
	var args []any
	if before > 0 {
		q += ` AND id < ?`
		args = append(args, before)
	}
	q += ` ORDER BY id DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	return scanOutbox(rows, err, "dropped")
}

// sentSinceQuery is SentSince's query without its LIMIT: a range scan of the index
// outbox_sent over one channel's rows sent in the window, in the order asked for.
const sentSinceQuery = `SELECT id, session_id, reply, created_at, attempts FROM outbox
		WHERE channel = ? AND sent_at IS NOT NULL AND sent_at > ? ORDER BY sent_at, id`

// SentSince lists the replies of channel marked sent after since, by any process, in the
// order they were sent (at most limit; 0 = no limit). sent_at is stamped before the
// commit that writes it, so rows appear slightly out of sent_at order: a follower on
// another replica (the web channel's live pages) re-reads a window behind its newest.
func (s *Store) SentSince(ctx context.Context, channel string, since time.Time, limit int) ([]core.Outgoing, error) {
	q := sentSinceQuery
	args := []any{channel, formatTime(since)}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	return scanOutbox(rows, err, "sent")
}

// scanOutbox reads rows of (id, session_id, reply, created_at, attempts[, owner[,
// dropped]]); err is the query's.
func scanOutbox(rows *sql.Rows, err error, what string) ([]core.Outgoing, error) {
	var cols []string
	if err == nil {
		if cols, err = rows.Columns(); err != nil {
			rows.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s replies: %w", what, err)
	}
	return collect(rows, nil, nil, func(sc scanner) (o core.Outgoing, err error) {
		var body, created string
		if err := sc.Scan([]any{&o.ID, &o.SessionID, &body, &created, &o.Attempts, &o.Owner, &o.Dropped}[:len(cols)]...); err != nil {
			return o, fmt.Errorf("listing %s replies: %w", what, err)
		}
		if err := json.Unmarshal([]byte(body), &o.Reply); err != nil {
			return o, fmt.Errorf("decoding outbox reply %d: %w", o.ID, err)
		}
		o.CreatedAt, err = parseTime(created, "outbox time")
		return o, err
	})
}
