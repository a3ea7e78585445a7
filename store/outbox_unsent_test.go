package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// queryPlan is SQLite's EXPLAIN QUERY PLAN of q, its lines joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// On SQLite UnsentOutbox reads the partial index outbox_unsent in id order, whatever the
// channels and the limit: no scan of the table, no sort. The outbox bookkeeping finds its
// row by the primary key, not through the index (whose predicate its WHERE implies).
func TestUnsentOutboxPlan(t *testing.T) {
	s, _ := openTest(t)
	for _, c := range []struct {
		chans []string
		limit int
	}{{nil, 0}, {nil, 5}, {[]string{"telegram"}, 0}, {[]string{"telegram", "slack"}, 5}} {
		q, args := unsentQuery(c.chans, c.limit)
		if p := queryPlan(t, s, q, args...); !strings.Contains(p, "USING INDEX outbox_unsent") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("UnsentOutbox(%v, %d): plan %s", c.chans, c.limit, p)
		}
	}
	if p := queryPlan(t, s, markSentQuery, "t", "m", 1); !strings.Contains(p, "INTEGER PRIMARY KEY (rowid=?)") {
		t.Errorf("MarkSent: plan %s", p)
	}
}

// Migration 0015 takes a file at version 14 with unsent and sent replies in it: the index
// is there again, the rows stay, and the unsent ones are listed through it.
func TestMigration0015(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	w := migratedTo(t, path, 14)
	for i := range 6 {
		var sent any
		if i%2 == 0 {
			sent = formatTime(at(2))
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, sent_at) VALUES ('s', ?, ?, ?, ?)`,
			[]string{"telegram", "telegram", "slack"}[i%3], fmt.Sprintf(`{"text":"r%d"}`, i), formatTime(at(1)), sent); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name = 'outbox_unsent'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("outbox_unsent: %d, %v; want it created", n, err)
	}
	rows, err := s.UnsentOutbox(ctx, []string{"telegram"}, 0)
	if err != nil || len(rows) != 2 || rows[0].ID != 2 || rows[1].ID != 4 || rows[1].Reply.Text != "r3" {
		t.Fatalf("unsent telegram after 0015: %+v, %v", rows, err)
	}
	if all, err := s.UnsentOutbox(ctx, nil, 0); err != nil || len(all) != 3 || all[2].ID != 6 {
		t.Fatalf("unsent after 0015: %+v, %v", all, err)
	}
}
