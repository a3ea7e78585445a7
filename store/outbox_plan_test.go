package store

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/store/pgtest"
)

// A reply is marked sent by id (MarkSent, three times per decision). On PostgreSQL the
// statement's "sent_at IS NULL AND dropped = ”" is the predicate of the partial index
// outbox_unsent, which the planner prefers to the primary key; keyed (channel, id) before
// 0011, the mark read every entry of it, including those replies marked sent leave
// behind until a vacuum. Here 5,000 replies are written and marked sent as the engine
// does, then a new reply's mark is explained with its buffers: before 0011 it reads the
// whole index, after it a handful of pages, in the generic plan the store's cached
// statements end up with as well as a custom one.
func TestMarkSentPlanPostgres(t *testing.T) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// No autovacuum on the table: an ANALYZE of its own between the inserts and the
	// explain (it comes when the test runs late in a slow run) lets the planner use the
	// primary key before 0011 too, and the plan the test compares depends on timing.
	for _, q := range []string{`ALTER TABLE outbox SET (autovacuum_enabled = off)`,
		`DROP INDEX outbox_unsent`, `CREATE INDEX outbox_unsent ON outbox (channel, id) WHERE sent_at IS NULL AND dropped = ''`,
		`DELETE FROM schema_migrations WHERE version >= 11`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at) VALUES (?, 'web', '{}', ?)`,
			"s"+strconv.Itoa(i%50), formatTime(now)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE outbox SET sent_at = created_at`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := s.w.QueryRowContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at) VALUES ('s', 'web', '{}', ?) RETURNING id`,
		formatTime(now)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	before := markSentBuffers(t, s, id)
	if err := migrate(ctx, s.w, time.Now); err != nil {
		t.Fatalf("applying 0011: %v", err)
	}
	after := markSentBuffers(t, s, id)
	for mode, n := range before {
		if n < 20 {
			t.Errorf("before 0011, %s: the mark read %d buffers; the test's outbox does not show the full scan", mode, n)
		}
		if after[mode] > 4 {
			t.Errorf("after 0011, %s: the mark read %d buffers, want a lookup of a few", mode, after[mode])
		}
	}
}

var scanBuffers = regexp.MustCompile(`Scan[^\n]*\n(?:[^\n]*\n)*?\s*Buffers: shared hit=(\d+)(?: read=(\d+))?`)

// markSentBuffers explains MarkSent's statement for reply id (rolled back) in a custom
// and a generic plan and returns the buffers its scan read in each (the scan's, not the
// update's, which writes the new row and its index entries too).
func markSentBuffers(t *testing.T, s *Store, id int64) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		func() {
			defer c.Release()
			for _, q := range []string{"BEGIN", "SET LOCAL plan_cache_mode = " + mode,
				`PREPARE mark AS UPDATE outbox SET sent_at = $1, platform_id = $2, attempts = attempts + 1 WHERE id = $3 AND sent_at IS NULL AND dropped = ''`} {
				if _, err := c.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			defer c.Exec(ctx, "ROLLBACK")
			defer c.Exec(ctx, "DEALLOCATE mark")
			rows, err := c.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE mark('x', '', "+strconv.FormatInt(id, 10)+")")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
		}()
		text := strings.Join(plan, "\n")
		m := scanBuffers.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s: no scan with buffers in the plan:\n%s", mode, text)
		}
		hit, _ := strconv.Atoi(m[1])
		read, _ := strconv.Atoi(m[2])
		out[mode] = hit + read
		t.Logf("%s:\n%s", mode, text)
	}
	return out
}
