package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/store/pgtest"
)

// The web follower polls SentSince on every replica every second or so, for the last
// 30 s: on a day's outbox of several channels that must be a range scan of one channel's
// recent rows in outbox_sent, in its order (no sort), not a scan of the table. Migration
// 0008 is applied here to a database at version 7 with that outbox in it. Only on
// PostgreSQL: the follower runs where replicas share a database, and SQLite's 0008 adds
// no index (it would cost a page write per reply marked sent for nothing).
func TestSentSincePlanPostgres(t *testing.T) {
	s, err := OpenPostgres(context.Background(), pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, after := sentSincePlans(t, s, "EXPLAIN ", func(rows []any) string { return fmt.Sprint(rows[0]) })
	if !strings.Contains(before, "Seq Scan on outbox") {
		t.Errorf("before 0008 the plan was not a scan; the test's data does not show what the index is for:\n%s", before)
	}
	if !strings.Contains(after, "Index Scan using outbox_sent on outbox") || strings.Contains(after, "Seq Scan") || strings.Contains(after, "Sort") {
		t.Errorf("SentSince's plan is not an index range scan of outbox_sent in order:\n%s", after)
	}
}

// sentSincePlans takes s (opened at the latest version) back to version 7, fills its
// outbox with a day of sent replies on four channels (and a few unsent), and returns the
// plan of SentSince's query for the web channel's last 30 s before and after migrating
// again, one line per row of explain's output (line picks the text of a row).
func sentSincePlans(t *testing.T, s *Store, explain string, line func([]any) string) (before, after string) {
	t.Helper()
	ctx := context.Background()
	// Undo 0009 and 0008, newest first (0010 is a no-op on PostgreSQL: it runs again).
	// No autovacuum on the table, so the plans compared do not depend on whether an
	// ANALYZE of its own came in between (see TestMarkSentPlanPostgres).
	for _, q := range []string{`ALTER TABLE outbox SET (autovacuum_enabled = off)`, `ALTER TABLE outbox DROP COLUMN owner`, `DROP INDEX outbox_sent`, `DELETE FROM schema_migrations WHERE version >= 8`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fillOutbox(t, s)
	before = sentSincePlan(t, s, explain, line)
	if err := migrate(ctx, s.w, time.Now); err != nil {
		t.Fatalf("applying 0008 and later to a filled outbox: %v", err)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = 8`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("migration 8 recorded %d times (%v), want once", n, err)
	}
	return before, sentSincePlan(t, s, explain, line)
}

// fillOutbox writes 20000 replies created over one day, a hundredth of them unsent.
func fillOutbox(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const n, batch = 20000, 500
	chans := []string{"web", "telegram", "slack", "discord"}
	for start := 0; start < n; start += batch {
		var vals []string
		var args []any
		for i := start; i < start+batch; i++ {
			at := formatTime(t0.Add(time.Duration(i) * 24 * time.Hour / n))
			var sent any = at
			if i%100 == 0 {
				sent = nil
			}
			vals = append(vals, "(?, ?, ?, ?, ?)")
			args = append(args, fmt.Sprintf("s%d", i%50), chans[i%len(chans)], `{"text":"a reply"}`, at, sent)
		}
		if _, err := s.w.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, sent_at) VALUES `+strings.Join(vals, ", "), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// sentSincePlan analyzes the tables and explains SentSince's query.
func sentSincePlan(t *testing.T, s *Store, explain string, line func([]any) string) string {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.w.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	since := formatTime(t0.Add(24*time.Hour - 30*time.Second))
	rows, err := s.w.QueryContext(ctx, explain+sentSinceQuery, "web", since) // the writer: it made the schema change
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, line(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("explain returned no plan")
	}
	t.Logf("plan of SentSince:\n%s", strings.Join(out, "\n"))
	return strings.Join(out, "\n")
}
