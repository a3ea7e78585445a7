//go:build unix

package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// Full scale of BenchmarkScale's store: a year of a large deployment.
const (
	scaleSessions = 100_000
	scaleMessages = 10_000_000
	scaleOutbox   = 1_000_000
	scaleNudges   = 1_000_000
	// scaleContent is the length of a transcript row's content: short chat turns and
	// longer tool results, averaged.
	scaleContent = 300
	// Every 100th session waits for a decision with an active reminder; the other
	// reminders are done.
	scalePendingEvery = 100
)

// BenchmarkScale fills a SQLite store with a year of a large deployment (100,000
// sessions, 10 million transcript rows, 1 million sent replies, 1 million reminders;
// PLANGATE_SCALE=0.1 fills a tenth), then measures what grows with it: opening the store
// and its quick check, the reads of start-up (unfinished sessions, the reminders to
// restore), the resident memory after them, a message's commit against an empty store
// in the same run, /plan status's and the dashboard's reads, a pruning pass of the
// default retention (its longest batch), and the file's size before and after.
// Run it alone: go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 60m ./store/
func BenchmarkScale(b *testing.B) {
	f := 1.0
	if v := os.Getenv("PLANGATE_SCALE"); v != "" {
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil || f <= 0 {
			b.Fatalf("PLANGATE_SCALE=%q: want a fraction such as 0.1", v)
		}
	}
	n := func(full int) int { return max(1, int(float64(full)*f)) }
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "plangate.db")
	now := time.Now().UTC()
	sessions := n(scaleSessions)

	start := time.Now()
	fillScale(b, path, now, sessions, n(scaleMessages), n(scaleOutbox), n(scaleNudges))
	b.ReportMetric(time.Since(start).Seconds(), "fill-s")
	b.ReportMetric(float64(fileSize(b, path))/(1<<20), "db-MB")

	// Start-up: open (migrations), quick check, the reads before serving.
	start = time.Now()
	if _, err := Check(ctx, path, false); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(time.Since(start)), "check-ms")
	start = time.Now()
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportMetric(ms(time.Since(start)), "open-ms")
	start = time.Now()
	var unfinished int
	for _, ph := range []core.Phase{core.PhaseExecuting, core.PhasePlanning, core.PhaseAwaitingApproval} {
		ss, err := s.SessionsAfter(ctx, ph, time.Time{}, "", 0)
		if err != nil {
			b.Fatal(err)
		}
		unfinished += len(ss)
	}
	if _, err := s.PendingPlans(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(time.Since(start)), "resume-reads-ms")
	start = time.Now()
	active, err := s.ActiveNudges(ctx)
	if err != nil || len(active) == 0 {
		b.Fatalf("ActiveNudges = %d, %v", len(active), err)
	}
	b.ReportMetric(ms(time.Since(start)), "nudge-restore-ms")
	b.ReportMetric(float64(len(active)), "nudges-active")
	runtime.GC()
	debug.FreeOSMemory()
	b.ReportMetric(vmRSS(b), "rss-MB")

	// /plan status: the session and its plan in one read, and its reminders.
	pending := scaleSessionID(0)
	b.ReportMetric(ms(timeEach(200, func() {
		if _, _, err := s.SessionPlan(ctx, pending, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Nudges(ctx, pending); err != nil {
			b.Fatal(err)
		}
	})), "status-ms")
	// The dashboard reads the sessions waiting for a person (channels/web).
	b.ReportMetric(ms(timeEach(20, func() {
		if _, err := s.WaitingSessions(ctx); err != nil {
			b.Fatal(err)
		}
	})), "dashboard-sessions-ms")

	// A message's commit, on this store and on an empty one, alternating.
	empty, _ := openTest(b)
	full, void := scaleTurns(b, s), scaleTurns(b, empty)
	var cpuFull, cpuEmpty time.Duration
	const rounds, per = 4, 250
	for range rounds {
		cpuFull += full(per)
		cpuEmpty += void(per)
	}
	b.ReportMetric(float64(cpuFull)/rounds/per/1e3, "full-cpu-us/msg")
	b.ReportMetric(float64(cpuEmpty)/rounds/per/1e3, "empty-cpu-us/msg")
	b.ReportMetric(float64(cpuFull)/float64(cpuEmpty), "cpu-ratio")

	// One pruning pass of the default retention, timed batch by batch.
	var batches []time.Duration
	keep := Retention{Transcripts: 90 * 24 * time.Hour, Outbox: 30 * 24 * time.Hour, Inbound: 48 * time.Hour, Audit: 365 * 24 * time.Hour}
	start = time.Now()
	p, err := s.Prune(ctx, keep, now, PruneOptions{AfterBatch: func(pb PruneBatch) { batches = append(batches, pb.Held) }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "prune-s")
	b.ReportMetric(float64(p.Total()), "pruned-rows")
	slices.Sort(batches)
	if len(batches) > 0 {
		b.ReportMetric(ms(batches[len(batches)/2]), "held-p50-ms")
		b.ReportMetric(ms(batches[len(batches)*99/100]), "held-p99-ms")
		b.ReportMetric(ms(batches[len(batches)-1]), "held-max-ms")
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	var free, pages int64
	if err := s.r.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		b.Fatal(err)
	}
	if err := s.r.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(pages-free)*PageSize/(1<<20), "pruned-used-MB")
	b.Logf("unfinished sessions %d; pruned %+v", unfinished, p)
}

func scaleSessionID(i int) string { return "telegram:bot:" + strconv.Itoa(i) }

// fillScale writes the rows with multi-row INSERTs from SQLite's own generator, in one
// transaction a table, without fsync: a fill, not what is measured.
func fillScale(b *testing.B, path string, now time.Time, sessions, messages, outbox, nudges int) {
	s, err := Open(context.Background(), path) // the schema
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	year := now.Add(-365 * 24 * time.Hour).Unix()
	// at(x, n): the x-th of n rows spread over the last year, in the store's time layout.
	at := func(x string, n int) string {
		return fmt.Sprintf(`strftime('%%Y-%%m-%%dT%%H:%%M:%%S', %d + (%s) * %d / %d, 'unixepoch') || '.000000000Z'`, year, x, 365*24*3600, n)
	}
	series := func(n int) string {
		return fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < %d) `, n-1)
	}
	sid := func(x string) string { return `'telegram:bot:' || (` + x + `)` }
	content := strings.Repeat("x", scaleContent-20)
	stmts := []struct {
		q    string
		args []any
	}{
		{series(sessions) + `INSERT INTO sessions (id, channel, account, chat, phase, owner, version, created_at, updated_at)
			SELECT ` + sid("x") + `, 'telegram', 'bot', x,
				CASE WHEN x % ` + strconv.Itoa(scalePendingEvery) + ` = 0 THEN 'awaiting_approval' ELSE 'off' END,
				'u' || x, 1, ` + at("x", sessions) + `, ` + at("x", sessions) + ` FROM c`, nil},
		{series(messages) + `INSERT INTO messages (session_id, role, content, at)
			SELECT ` + sid(fmt.Sprintf("x %% %d", sessions)) + `, CASE WHEN x % 2 = 0 THEN 'user' ELSE 'assistant' END,
				'message ' || x || ' ' || ?, ` + at("x", messages) + ` FROM c`, []any{content}},
		{series(outbox) + `INSERT INTO outbox (session_id, channel, reply, created_at, sent_at, platform_id)
			SELECT ` + sid(fmt.Sprintf("x %% %d", sessions)) + `, 'telegram',
				'{"to":{"channel":"telegram","account":"bot","chat":"' || (x % ` + strconv.Itoa(sessions) + `) || '"},"text":"reply ' || x || '"}',
				` + at("x", outbox) + `, ` + at("x", outbox) + `, 'm' || x FROM c`, nil},
		{series(nudges) + `INSERT INTO nudges (session_id, kind, action, spec, next_fire_at, status, created_at)
			SELECT ` + sid(fmt.Sprintf("x %% %d", sessions)) + `, 'once', 'remind', '@every 30m',
				CASE WHEN x < ` + strconv.Itoa(sessions) + ` AND x % ` + strconv.Itoa(scalePendingEvery) + ` = 0 THEN ` + at(strconv.Itoa(nudges), nudges) + ` END,
				CASE WHEN x < ` + strconv.Itoa(sessions) + ` AND x % ` + strconv.Itoa(scalePendingEvery) + ` = 0 THEN 'active' ELSE 'done' END,
				` + at("x", nudges) + ` FROM c`, nil},
	}
	for _, st := range stmts {
		if _, err := db.Exec(st.q, st.args...); err != nil {
			b.Fatalf("filling: %v\n%s", err, st.q)
		}
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}

// scaleTurns returns a function committing k messages (the inbound key, the session
// row, the person's message and the answer, its outbox row, then its mark-sent) to a new
// session of s, returning the process CPU they took.
func scaleTurns(b *testing.B, s *Store) func(k int) time.Duration {
	ctx := context.Background()
	addr := core.Address{Channel: "telegram", Account: "bot", Chat: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: addr.SessionID(), Address: addr, Phase: core.PhaseOff, Owner: "u1"}})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	return func(k int) time.Duration {
		start := coretest.ProcessCPU(b)
		for range k {
			i++
			key := core.InboundKey{Channel: "telegram", Account: "bot", EventID: addr.Chat + "-" + strconv.Itoa(i)}
			if _, _, err := s.SessionPlan(ctx, cur.ID, &key); err != nil {
				b.Fatal(err)
			}
			t := time.Now()
			ch := core.Change{Session: &cur, Inbound: &key, Lazy: true,
				Messages: []core.ChatMessage{{Role: core.RoleUser, Name: "u1", Content: "hello there", At: t},
					{Role: core.RoleAssistant, Content: "re: hello there", At: t}},
				Outbox: []core.Outgoing{{SessionID: cur.ID, Reply: core.Reply{To: addr, Text: "re: hello there"}, CreatedAt: t}}}
			if cur, err = s.Commit(ctx, ch); err != nil {
				b.Fatal(err)
			}
			if err := s.MarkSent(ctx, ch.Outbox[0].ID, "m", t); err != nil {
				b.Fatal(err)
			}
		}
		return coretest.ProcessCPU(b) - start
	}
}

func timeEach(k int, fn func()) time.Duration {
	start := time.Now()
	for range k {
		fn()
	}
	return time.Since(start) / time.Duration(k)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func fileSize(b *testing.B, path string) int64 {
	var total int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		} else if !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
	return total
}

// vmRSS is the process's resident memory in MiB (/proc/self/status).
func vmRSS(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
