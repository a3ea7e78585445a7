package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/store/pgtest"
)

// BenchmarkDecisionFloorPostgres is BenchmarkDecisionFloor on PostgreSQL (the target:
// decisions at no less than half the rate of single-row insert transactions on the same
// server): a /plan accept with only what its guarantees need, through pgx on the
// store's own migrated schema and pool, and no plangate code on the path.
//
//  1. the read, one round trip: a batch of the inbound key, the session row and its plan;
//  2. the transaction, two round trips: BEGIN and the writes of BenchmarkDecisionFloor
//     (inbound key, the session's compare-and-set, plan, audit row, nudges, two outbox
//     rows) in one batch, then COMMIT once their outcomes were checked, which is what
//     plangate's transitions do (a COMMIT sent in the batch would commit a killed
//     replica's work after another took it over: docs/performance.md);
//  3. with the turn: the lease with the replies' marks (one round trip, the COMMIT in
//     the batch, as plangate's one-statement writes), the turn's commit (two), the release
//     with the answer's mark (one).
//
// The server groups concurrent commits' WAL flushes itself. Chunks of decisions alternate
// with chunks of single-row insert transactions (BEGIN, INSERT, COMMIT: as
// BenchmarkPostgresInsert) from as many goroutines, so ratio compares the same minutes;
// cpu-µs/decision is this process's CPU (the client's), not the server's.
func BenchmarkDecisionFloorPostgres(b *testing.B) {
	for _, acked := range []bool{false, true} {
		for _, sessions := range []int{1, 20} {
			name := fmt.Sprintf("sessions=%d/turn", sessions)
			if acked {
				name = fmt.Sprintf("sessions=%d/acked", sessions)
			}
			b.Run(name, func(b *testing.B) { benchFloorPostgres(b, sessions, acked) })
		}
	}
}

func benchFloorPostgres(b *testing.B, sessions int, acked bool) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, pgtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ids := seedPending(b, s, b.N)
	f := &pgFloor{pool: s.pool, owner: "floor"}
	insert := pgtest.Inserts(b, s.pool)
	inserts := 100 * min(sessions, 4) // enough for 20 goroutines to overlap
	raw := func() time.Duration {
		start := time.Now()
		if err := coretest.Parallel(sessions, inserts, insert); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}

	chunk := 100
	if sessions > 1 {
		chunk = 200
	}
	var (
		decTime, rawTime, cpu time.Duration
		rawN                  int
	)
	b.ResetTimer()
	for done := 0; done < len(ids); done += chunk {
		rawTime += raw()
		rawN += inserts
		part := ids[done:min(done+chunk, len(ids))]
		c0 := coretest.ProcessCPU(b)
		start := time.Now()
		if err := coretest.Parallel(sessions, len(part), func(i int) error { return f.decide(ctx, part[i], acked) }); err != nil {
			b.Fatal(err)
		}
		decTime += time.Since(start)
		cpu += coretest.ProcessCPU(b) - c0
	}
	rawTime += raw()
	rawN += inserts
	b.StopTimer()
	f.check(b, ids[len(ids)-1], acked)

	rate := float64(len(ids)) / decTime.Seconds()
	rawRate := float64(rawN) / rawTime.Seconds()
	b.ReportMetric(rate, "decisions/s")
	b.ReportMetric(rawRate, "raw-commits/s")
	b.ReportMetric(rate/rawRate, "ratio")
	b.ReportMetric(cpu.Seconds()*1e6/float64(len(ids)), "cpu-µs/decision")
}

// pgFloor is the minimal gateway's PostgreSQL store: the pool.
type pgFloor struct {
	pool  *pgxpool.Pool
	owner string
	mu    sync.Mutex
	event int64
}

// q is a statement of the SQLite floor in PostgreSQL's placeholders.
func q(query string) string { return postgresDialect.q(query) }

func (f *pgFloor) decide(ctx context.Context, id string, acked bool) error {
	f.mu.Lock()
	f.event++
	event := fmt.Sprintf("ev-%d", f.event)
	f.mu.Unlock()
	chat := strings.TrimPrefix(id, "terminal:local:")

	// 1. The read.
	var rd floorRead
	br := f.pool.SendBatch(ctx, &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{
		{SQL: q(seenInboundQuery), Arguments: []any{"terminal", "local", event}},
		{SQL: q(`SELECT version, phase, plan_id, approval_id FROM sessions WHERE id = ?`), Arguments: []any{id}},
		{SQL: q(`SELECT p.version, p.status, p.body, p.approval_id FROM plans p JOIN sessions s ON s.plan_id = p.id WHERE s.id = ?`), Arguments: []any{id}},
	}})
	var one int
	switch err := br.QueryRow().Scan(&one); {
	case err == nil:
		br.Close()
		return core.ErrDuplicate
	case !errors.Is(err, pgx.ErrNoRows):
		br.Close()
		return err
	}
	if err := br.QueryRow().Scan(&rd.version, &rd.phase, &rd.planID, &rd.approval); err != nil {
		br.Close()
		return err
	}
	if err := br.QueryRow().Scan(&rd.planVersion, &rd.status, &rd.body, &rd.planApprovalID); err != nil {
		br.Close()
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	if rd.phase != string(core.PhaseAwaitingApproval) || rd.status != string(core.PlanPending) || rd.approval != rd.planApprovalID {
		return fmt.Errorf("%s: phase %s, plan %s", id, rd.phase, rd.status)
	}

	rw, err := decisionRows(rd, event, chat)
	if err != nil {
		return err
	}
	at := rw.at

	// 2. The transaction: the writes in one batch, COMMIT after their outcomes.
	var rows [2]int64
	if err := f.tx(ctx, []write{
		{q(`INSERT INTO inbound (channel, account, event_id, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`), []any{"terminal", "local", event, at}, 1},
		{q(`UPDATE sessions SET phase = 'executing', approval_id = NULL, injections = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?`), []any{rw.inj, at, id, rd.version}, 1},
		{q(`UPDATE plans SET status = 'accepted', decision = ?, updated_at = ? WHERE id = ?`), []any{rw.decision, at, rd.planID}, 1},
		{q(`INSERT INTO plan_events (session_id, plan_id, plan_version, kind, actor, channel, detail, at) VALUES (?, ?, ?, 'accepted', 'person:local', 'terminal', '', ?)`), []any{id, rd.planID, rd.planVersion, at}, 1},
		{q(`UPDATE nudges SET status = 'cancelled', next_fire_at = NULL WHERE session_id = ? AND status = 'active'`), []any{id}, -1},
	}, rw.replies[:], id, at, rows[:]); err != nil {
		return err
	}
	if acked {
		return nil
	}

	// 3. The turn's writes.
	lease := "session:" + id
	if err := f.oneTrip(ctx,
		write{q(`INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`),
			[]any{lease, f.owner, formatTime(rw.now.Add(time.Minute)), at}, 1},
		write{q(markSentQuery), []any{at, "", rows[0]}, -1},
		write{q(markSentQuery), []any{at, "", rows[1]}, -1},
	); err != nil {
		return err
	}
	answer, err := json.Marshal(core.Reply{To: rw.to, Text: "ok"})
	if err != nil {
		return err
	}
	var answerRow [1]int64
	if err := f.tx(ctx, []write{
		{q(`UPDATE sessions SET injections = '[]', version = version + 1, updated_at = ? WHERE id = ? AND version = ?`), []any{at, id, rd.version + 1}, 1},
		{q(`INSERT INTO messages (session_id, role, content, tool_call_id, name, at) VALUES (?, 'user', ?, '', '', ?)`), []any{id, rw.injection, at}, 1},
		{q(`INSERT INTO messages (session_id, role, content, tool_call_id, name, at) VALUES (?, 'assistant', 'ok', '', '', ?)`), []any{id, at}, 1},
	}, []string{string(answer)}, id, at, answerRow[:]); err != nil {
		return err
	}
	return f.oneTrip(ctx,
		write{q(`DELETE FROM leases WHERE name = ? AND owner = ?`), []any{lease, f.owner}, 1},
		write{q(markSentQuery), []any{at, "", answerRow[0]}, -1},
	)
}

// write is a statement of a floor transaction and the rows it must change (-1: any).
type write struct {
	sql  string
	args []any
	want int64
}

// tx runs BEGIN, ws and an outbox row per reply (their ids into rows) in one batch, and
// COMMIT in a second round trip once every outcome was as wanted.
func (f *pgFloor) tx(ctx context.Context, ws []write, replies []string, session, at string, rows []int64) error {
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	for _, w := range ws {
		batch.Queue(w.sql, w.args...)
	}
	for _, r := range replies {
		batch.Queue(q(`INSERT INTO outbox (session_id, channel, reply, created_at, owner) VALUES (?, 'terminal', ?, ?, ?) RETURNING id`), session, r, at, f.owner)
	}
	br := conn.SendBatch(ctx, batch)
	check := func() error {
		if _, err := br.Exec(); err != nil { // BEGIN
			return err
		}
		for _, w := range ws {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			if w.want >= 0 && tag.RowsAffected() != w.want {
				return fmt.Errorf("%d rows changed, want %d: %s", tag.RowsAffected(), w.want, w.sql)
			}
		}
		for i := range replies {
			if err := br.QueryRow().Scan(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	}
	err = check()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_, _ = conn.Exec(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.Exec(ctx, "COMMIT")
	return err
}

// oneTrip sends BEGIN, ws and COMMIT in one batch: writes whose outcome may be anything
// but an error (as plangate's one-statement lease writes and marks).
func (f *pgFloor) oneTrip(ctx context.Context, ws ...write) error {
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	for _, w := range ws {
		batch.Queue(w.sql, w.args...)
	}
	batch.Queue("COMMIT")
	return f.pool.SendBatch(ctx, batch).Close()
}

// check makes sure the floor did what it says to the last session.
func (f *pgFloor) check(b *testing.B, id string, acked bool) {
	b.Helper()
	ctx := context.Background()
	var phase, inj string
	var unsent int
	if err := f.pool.QueryRow(ctx, `SELECT phase, injections FROM sessions WHERE id = $1`, id).Scan(&phase, &inj); err != nil {
		b.Fatal(err)
	}
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE session_id = $1 AND sent_at IS NULL`, id).Scan(&unsent); err != nil {
		b.Fatal(err)
	}
	// Acked: the decision's injection waits for the turn, and its two replies for a send.
	// With the turn: both consumed, every reply marked.
	wantUnsent, wantInjected := 0, false
	if acked {
		wantUnsent, wantInjected = 2, true
	}
	if phase != string(core.PhaseExecuting) || (inj != "[]") != wantInjected || unsent != wantUnsent {
		b.Fatalf("the last session: phase %s, injections %.40s, %d replies unsent; want executing, injected %v, %d unsent", phase, inj, unsent, wantInjected, wantUnsent)
	}
}
