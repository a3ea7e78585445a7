package store

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/plangate/plangate/core/backoff"
	"strings"
	"time"
)

// Retention says how long each kind of row is kept, by age; 0 keeps it forever.
type Retention struct {
	Transcripts time.Duration // messages: what the agent reads back as history
	Outbox      time.Duration // outbox rows sent or given up (never an unsent one)
	Inbound     time.Duration // inbound event ids kept for de-duplication
	Audit       time.Duration // plan_events, the audit log
}

// PruneOptions bound the work of one Prune.
type PruneOptions struct {
	// Batch is how many rows one transaction deletes at most (DefaultPruneBatch).
	Batch int
	// Pause is the wait between two batches, so other writers get the database (0 = none).
	Pause time.Duration
	// AfterBatch, when set, is told each committed batch.
	AfterBatch func(PruneBatch)
}

// PruneBatch is one committed delete of Prune.
type PruneBatch struct {
	Table string        // messages, outbox, plan_events or inbound
	Rows  int           // rows it deleted
	Held  time.Duration // how long the delete statement ran on the writer (its fsync not counted)
}

// Pruned counts the rows one Prune deleted.
type Pruned struct {
	Transcripts, Outbox, Inbound, Audit int64
}

// Total is every row deleted.
func (p Pruned) Total() int64 { return p.Transcripts + p.Outbox + p.Inbound + p.Audit }

// DefaultPruneBatch is PruneOptions.Batch's default: a delete of 100 transcript rows by
// their keys holds SQLite's writer for about half a millisecond on a store of 1 million
// rows, where 500 took about 9 (docs/performance.md).
const DefaultPruneBatch = 100

// protectedSession is true for a row's session whose plan waits for a decision or is
// being carried out: its transcript, replies and audit rows are kept whatever their age.
// It names the row's table as r.
const protectedSession = `EXISTS (SELECT 1 FROM sessions p WHERE p.id = r.session_id
	AND p.phase IN ('awaiting_approval', 'executing'))`

// A table pruned by id: candidates are read in id order (ids grow with time) outside
// the writer, then deleted by id in small statements that check the condition again.
type idTable struct {
	name, table, at string
	keep            string // a condition on r that keeps a row whatever its age ("" = none)
}

var (
	transcriptTable = idTable{name: "messages", table: "messages", at: "at", keep: protectedSession}
	auditTable      = idTable{name: "plan_events", table: "plan_events", at: "at", keep: protectedSession}
	outboxTable     = idTable{name: "outbox", table: "outbox", at: "created_at",
		keep: `(r.sent_at IS NULL AND r.dropped = '') OR ` + protectedSession}
)

// Prune deletes rows older than r says, measured from now, in batches of at most
// opt.Batch rows with opt.Pause between them. It never deletes an unsent reply, nor a
// transcript, reply or audit row of a session in awaiting_approval or executing.
// Sessions, plans and nudges are never pruned. It stops at the first error or when ctx
// ends, returning what it had deleted by then.
func (s *Store) Prune(ctx context.Context, r Retention, now time.Time, opt PruneOptions) (Pruned, error) {
	if opt.Batch <= 0 {
		opt.Batch = DefaultPruneBatch
	}
	var p Pruned
	steps := []struct {
		keep time.Duration
		n    *int64
		run  func(cut string, n *int64) error
	}{
		{r.Transcripts, &p.Transcripts, func(cut string, n *int64) error { return s.pruneByID(ctx, transcriptTable, cut, opt, n) }},
		{r.Outbox, &p.Outbox, func(cut string, n *int64) error { return s.pruneByID(ctx, outboxTable, cut, opt, n) }},
		{r.Audit, &p.Audit, func(cut string, n *int64) error { return s.pruneByID(ctx, auditTable, cut, opt, n) }},
		{r.Inbound, &p.Inbound, func(cut string, n *int64) error { return s.pruneInbound(ctx, cut, opt, n) }},
	}
	for _, st := range steps {
		if st.keep <= 0 {
			continue
		}
		if err := st.run(formatTime(now.Add(-st.keep)), st.n); err != nil {
			return p, err
		}
	}
	return p, nil
}

// pruneByID walks t from its oldest row in id order, a page of opt.Batch rows at a
// time, and deletes those older than cut. It stops at the first page that reaches a row
// as new as cut: the rows after it are newer (rows commit a moment out of order at
// most, and a straggler is caught by the next run).
func (s *Store) pruneByID(ctx context.Context, t idTable, cut string, opt PruneOptions, n *int64) error {
	page := `SELECT r.id, r.` + t.at + ` < ? FROM ` + t.table + ` r WHERE r.id > ? ORDER BY r.id LIMIT ?`
	var after int64
	for {
		ids, more, last, err := s.oldIDs(ctx, page, cut, after, opt.Batch)
		if err != nil {
			return fmt.Errorf("pruning %s: %w", t.name, explain(err))
		}
		after = last
		if len(ids) > 0 {
			q := `DELETE FROM ` + t.table + ` AS r WHERE r.id IN (` + placeholders(len(ids)) + `) AND r.` + t.at + ` < ?`
			if t.keep != "" {
				q += ` AND NOT (` + t.keep + `)`
			}
			res, held, err := s.execTimed(ctx, q, append(ids, cut)...)
			if err != nil {
				return fmt.Errorf("pruning %s: %w", t.name, explain(err))
			}
			if err := s.batchDone(t.name, res, held, opt, n); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		if err := backoff.Sleep(ctx, opt.Pause); err != nil {
			return err
		}
	}
}

// oldIDs reads one page of query: the ids older than cut, whether a further page may
// hold old rows, and the last id read.
func (s *Store) oldIDs(ctx context.Context, query, cut string, after int64, limit int) (ids []any, more bool, last int64, err error) {
	rows, err := s.r.QueryContext(ctx, query, cut, after, limit)
	if err != nil {
		return nil, false, after, err
	}
	defer rows.Close()
	read, newSeen := 0, false
	last = after
	for rows.Next() {
		var id int64
		var old bool
		if err := rows.Scan(&id, &old); err != nil {
			return nil, false, after, err
		}
		read, last = read+1, id
		if old {
			ids = append(ids, id)
		} else {
			newSeen = true
		}
	}
	return ids, read == limit && !newSeen, last, rows.Err()
}

// pruneInbound deletes inbound event ids recorded before cut, opt.Batch keys a
// statement; the keys are read outside the writer.
func (s *Store) pruneInbound(ctx context.Context, cut string, opt PruneOptions, n *int64) error {
	for {
		keys, err := s.oldInbound(ctx, cut, opt.Batch)
		if err != nil {
			return fmt.Errorf("pruning inbound events: %w", explain(err))
		}
		if len(keys) == 0 {
			return nil
		}
		q := `DELETE FROM inbound WHERE at < ? AND (channel, account, event_id) IN (VALUES ` + rowPlaceholders(len(keys)/3, 3) + `)`
		res, held, err := s.execTimed(ctx, q, append([]any{cut}, keys...)...)
		if err != nil {
			return fmt.Errorf("pruning inbound events: %w", explain(err))
		}
		if err := s.batchDone("inbound", res, held, opt, n); err != nil {
			return err
		}
		if len(keys)/3 < opt.Batch {
			return nil
		}
		if err := backoff.Sleep(ctx, opt.Pause); err != nil {
			return err
		}
	}
}

func (s *Store) oldInbound(ctx context.Context, cut string, limit int) ([]any, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT channel, account, event_id FROM inbound WHERE at < ? LIMIT ?`, cut, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []any
	for rows.Next() {
		var c, a, e string
		if err := rows.Scan(&c, &a, &e); err != nil {
			return nil, err
		}
		keys = append(keys, c, a, e)
	}
	return keys, rows.Err()
}

// batchDone adds a committed batch's rows to n and tells opt.AfterBatch.
func (s *Store) batchDone(table string, res sql.Result, held time.Duration, opt PruneOptions, n *int64) error {
	k, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("pruning %s: %w", table, err)
	}
	*n += k
	if opt.AfterBatch != nil {
		opt.AfterBatch(PruneBatch{Table: table, Rows: int(k), Held: held})
	}
	return nil
}

// placeholders is "?, ?, ..." for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// rowPlaceholders is "(?, ?, ?), (?, ?, ?)" for n rows of width values.
func rowPlaceholders(n, width int) string {
	row := "(" + placeholders(width) + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}
