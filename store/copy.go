package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// copyTables lists every table, parents before children, with its columns and booleans
// (INTEGER 0/1 on SQLite, BOOLEAN on PostgreSQL). Ids are copied as they are, so
// references between rows, approval ids in buttons and outbox ids stay valid.
var copyTables = []copySpec{
	{name: "sessions", cols: "id, channel, account, chat, thread, phase, auto_approve, owner, plan_id, approval_id, " +
		"rejection_count, last_feedback, nudge_spec, question, injections, requesters, tokens, version, created_at, updated_at",
		order: "id", bools: map[string]bool{"auto_approve": true}},
	{name: "plans", cols: "id, session_id, version, status, approval_id, body, hash, file, decision, approvals, requesters, edited_by, run, " +
		"prompt_tokens, cached_tokens, completion_tokens, model_calls, unreported_calls, created_at, updated_at", order: "id"},
	{name: "messages", cols: "id, session_id, role, content, tool_calls, tool_call_id, name, at", order: "id", identity: true},
	{name: "plan_events", cols: "id, session_id, plan_id, plan_version, kind, actor, channel, detail, at", order: "id", identity: true},
	{name: "nudges", cols: "id, session_id, plan_id, kind, action, spec, next_fire_at, fired, missed, status, created_at", order: "id", identity: true},
	{name: "nudge_firings", cols: "nudge_id, scheduled_at, fired_at, outcome, recorded_at", order: "nudge_id, scheduled_at"},
	{name: "inbound", cols: "channel, account, event_id, at", order: "channel, account, event_id"},
	{name: "channel_state", cols: "channel, account, key, value, updated_at", order: "channel, account, key"},
	{name: "leases", cols: "name, owner, expires_at", order: "name"},
	{name: "tool_runs", cols: "session_id, call_id, tool, detail, started_at, finished_at, outcome", order: "session_id, call_id"},
	{name: "outbox", cols: "id, session_id, channel, reply, created_at, attempts, sent_at, platform_id, dropped", order: "id", identity: true},
}

type copySpec struct {
	name, cols, order string
	bools             map[string]bool
	identity          bool // PostgreSQL generates the id: copied with OVERRIDING SYSTEM VALUE
}

// CopyResult counts the rows copied per table.
type CopyResult struct {
	Rows map[string]int64
}

// Copy copies every row of src into dst (e.g. a SQLite file into a new PostgreSQL
// database) in one transaction on dst, refusing a dst that holds any row: a copy never
// merges two deployments. Opening applied the migrations to both. Stop the gateway that
// uses src first, or the copy misses what it writes meanwhile.
func Copy(ctx context.Context, dst, src *Store) (CopyResult, error) {
	res := CopyResult{Rows: map[string]int64{}}
	for _, t := range copyTables {
		var one int
		err := dst.r.QueryRowContext(ctx, `SELECT 1 FROM `+t.name+` LIMIT 1`).Scan(&one)
		if err == nil {
			return res, fmt.Errorf("copying into store %s: table %s is not empty: copy into an empty database", dst.path, t.name)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return res, fmt.Errorf("copying into store %s: checking table %s: %w", dst.path, t.name, err)
		}
	}
	tx, err := dst.w.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("copying into store %s: beginning transaction: %w", dst.path, err)
	}
	defer tx.Rollback() // a no-op after Commit
	for _, t := range copyTables {
		n, err := copyRows(ctx, tx, dst.w.d, src, t, t.identity && dst.pool != nil)
		if err != nil {
			return res, fmt.Errorf("copying %s from store %s to %s: %w", t.name, src.path, dst.path, err)
		}
		res.Rows[t.name] = n
		if t.identity && dst.pool != nil && n > 0 {
			// The next generated id must follow the copied ones.
			if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), (SELECT MAX(id) FROM `+t.name+`))`, t.name); err != nil {
				return res, fmt.Errorf("copying %s: advancing its id sequence: %w", t.name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("copying into store %s: committing: %w", dst.path, err)
	}
	return res, nil
}

// copyRows copies one table's rows from src into tx, converting booleans for tx's
// dialect, and returns how many it copied.
func copyRows(ctx context.Context, tx *sql.Tx, d dialect, src *Store, t copySpec, overriding bool) (int64, error) {
	names := strings.Split(t.cols, ", ")
	insert := `INSERT INTO ` + t.name + ` (` + t.cols + `) `
	if overriding {
		insert += `OVERRIDING SYSTEM VALUE `
	}
	insert = d.q(insert + `VALUES (?` + strings.Repeat(`, ?`, len(names)-1) + `)`)
	rows, err := src.r.QueryContext(ctx, `SELECT `+t.cols+` FROM `+t.name+` ORDER BY `+t.order)
	if err != nil {
		return 0, fmt.Errorf("reading: %w", err)
	}
	defer rows.Close()
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	var n int64
	for rows.Next() {
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, fmt.Errorf("reading: %w", err)
		}
		for i, c := range names {
			if t.bools[c] {
				vals[i] = truthy(vals[i])
			}
		}
		if _, err := tx.ExecContext(ctx, insert, vals...); err != nil {
			return n, fmt.Errorf("writing row %d: %w", n+1, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("reading: %w", err)
	}
	return n, nil
}

// truthy reads a stored boolean: SQLite hands back an integer, PostgreSQL a bool.
func truthy(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case int64:
		return b != 0
	}
	return false
}
