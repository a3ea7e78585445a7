package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/plan"
)

// BenchmarkDecisionFloor is the floor of BenchmarkEngineDecisions (core/engine/bench_test.go):
// the least work a /plan accept needs for its guarantees (docs/design.md §3 and §8), done with
// the store's SQLite settings (writerDSN, readerDSN, 1 KB pages, synchronous=NORMAL and
// an fdatasync of the -wal outside the writer) on the store's own schema (the file Open
// migrated), and nothing of plangate's code on the path. Per decision:
//
//  1. one read transaction on the read pool: the inbound key, the session row, its plan;
//  2. one write transaction on the single writer connection: the inbound key, the
//     session row's compare-and-set (phase, the decision's injection, version + 1), the
//     plan's status and decision, the audit row, the cancellation of the session's
//     nudges, the two reply rows of the outbox (what plangate's decision writes);
//  3. an fdatasync of the -wal begun after that commit, before the caller returns.
//
// /turn also does the writes of the agent turn the decision starts, as lazy
// transactions: the lease's acquire carrying the two replies' marks, the turn's commit
// (the injection as a user message, the answer, the session's compare-and-set, the
// answer's outbox row), the release carrying the answer's mark. No model call, no send:
// both are in memory in BenchmarkEngineDecisions.
//
// sessions=20 runs twenty goroutines deciding at once through a minimal group commit
// (floorWriter): a leader runs every write queued when it starts in one transaction, each
// in a savepoint, and the durable callers share the fsyncs (floorSync), as the store does.
//
// Chunks of decisions alternate with chunks of raw single-row fsynced commits
// (BenchmarkSQLiteCommit's: the writer's DSN at synchronous=FULL, its own file in the same
// directory), so ratio (decisions/s ÷ raw-commits/s) is the figure from the same
// minutes of the same disk. cpu-µs/decision is the process's CPU during the decision
// chunks only.
//
// FLOOR_CPUPROFILE=<prefix> writes a CPU profile of the timed part (decisions and raw
// commits; pprof's -focus=decideAll keeps the decisions) to <prefix>-<case>.prof.
func BenchmarkDecisionFloor(b *testing.B) {
	for _, acked := range []bool{false, true} {
		for _, sessions := range []int{1, 20} {
			name := fmt.Sprintf("sessions=%d/turn", sessions)
			if acked {
				name = fmt.Sprintf("sessions=%d/acked", sessions)
			}
			b.Run(name, func(b *testing.B) { benchFloor(b, sessions, acked) })
		}
	}
}

func benchFloor(b *testing.B, sessions int, acked bool) {
	ctx := context.Background()
	dir := b.TempDir()
	path, err := filepath.Abs(filepath.Join(dir, "plangate.db"))
	if err != nil {
		b.Fatal(err)
	}
	ids := floorSetup(b, path, b.N)
	f := openFloor(b, path)
	raw := openRaw(b, filepath.Join(dir, "raw.db"))

	chunk := 100
	if sessions > 1 {
		chunk = 200
	}
	var (
		decTime, rawTime time.Duration
		cpu              time.Duration
		rawN             int
	)
	b.ResetTimer()
	stopProfile := coretest.TimedProfile(b, "FLOOR_CPUPROFILE", "")
	for done := 0; done < len(ids); done += chunk {
		rawTime += raw.commits(b, 100)
		rawN += 100
		part := ids[done:min(done+chunk, len(ids))]
		c0 := coretest.ProcessCPU(b)
		start := time.Now()
		if err := f.decideAll(ctx, part, sessions, acked); err != nil {
			b.Fatal(err)
		}
		decTime += time.Since(start)
		cpu += coretest.ProcessCPU(b) - c0
	}
	rawTime += raw.commits(b, 100)
	rawN += 100
	stopProfile()
	b.StopTimer()
	f.check(b, ids[len(ids)-1], acked)

	rate := float64(len(ids)) / decTime.Seconds()
	rawRate := float64(rawN) / rawTime.Seconds()
	n := float64(len(ids))
	b.ReportMetric(rate, "decisions/s")
	b.ReportMetric(rawRate, "raw-commits/s")
	b.ReportMetric(rate/rawRate, "ratio")
	b.ReportMetric(cpu.Seconds()*1e6/n, "cpu-µs/decision")
	b.ReportMetric(float64(f.w.syncs.runs)/n, "syncs/decision")
	b.ReportMetric(float64(f.w.txs)/n, "txs/decision")
}

// floorSetup gives the store's schema n sessions awaiting approval of a pending plan
// (through Store.Commit, as plangate writes them) and closes the store.
func floorSetup(b *testing.B, path string, n int) []string {
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	ids := seedPending(b, s, n)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return ids
}

// seedPending commits n sessions awaiting approval of a pending plan into s, as plangate
// writes them, and returns their ids.
func seedPending(b *testing.B, s *Store, n int) []string {
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		a := core.Address{Channel: "terminal", Account: "local", Chat: fmt.Sprintf("d-%d", i)}
		id := a.SessionID()
		pid := fmt.Sprintf("p%09d", i)
		ids[i] = id
		_, err := s.Commit(ctx, core.Change{
			Lazy: true,
			Session: &core.Session{ID: id, Address: a, Phase: core.PhaseAwaitingApproval, Owner: "local",
				PlanID: pid, ApprovalID: "a" + pid, Requesters: []core.Requester{{By: "terminal:local"}}},
			Plans: []core.Plan{{ID: pid, Version: 1, Status: core.PlanPending, ApprovalID: "a" + pid,
				Body: plan.Body{Title: "Decision bench", Summary: "Summary of Decision bench",
					Steps: []plan.Step{{ID: "1", Text: "First step", Status: plan.StepPending}, {ID: "2", Text: "Second step", Status: plan.StepPending}}},
				File: "/plans/" + id + "/plan-v1.md", Requesters: []core.Requester{{By: "terminal:local"}}}},
			Events: []core.Event{{Kind: core.EventProposed, Actor: core.AgentActor, Channel: "terminal"}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// floor is the minimal gateway's store: the writer, the read pool, the -wal to fsync.
type floor struct {
	w     *floorWriter
	r     *sql.DB
	owner string
	event int64 // the next inbound event id (atomic by mu)
	mu    sync.Mutex
}

func openFloor(b *testing.B, path string) *floor {
	ctx := context.Background()
	wdb, err := sql.Open("sqlite3", writerDSN(path))
	if err != nil {
		b.Fatal(err)
	}
	wdb.SetMaxOpenConns(1)
	b.Cleanup(func() { wdb.Close() })
	conn, err := wdb.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	wal, err := os.OpenFile(path+"-wal", os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { wal.Close() })
	rdb, err := sql.Open("sqlite3", readerDSN(path))
	if err != nil {
		b.Fatal(err)
	}
	rdb.SetMaxOpenConns(readConns)
	rdb.SetMaxIdleConns(readConns)
	b.Cleanup(func() { rdb.Close() })
	s := &floorSync{f: wal}
	s.cond = sync.NewCond(&s.mu)
	return &floor{w: &floorWriter{conn: conn, syncs: s}, r: rdb, owner: "bench/1/floor"}
}

// decideAll decides every session in ids from sessions goroutines.
func (f *floor) decideAll(ctx context.Context, ids []string, sessions int, acked bool) error {
	return coretest.Parallel(sessions, len(ids), func(i int) error { return f.decide(ctx, ids[i], acked) })
}

// floorRead is what a decision reads.
type floorRead struct {
	version        int64
	phase, planID  string
	approval       sql.NullString
	planVersion    int64
	status, body   string
	planApprovalID sql.NullString
}

// decide is one /plan accept at its floor.
func (f *floor) decide(ctx context.Context, id string, acked bool) error {
	f.mu.Lock()
	f.event++
	event := fmt.Sprintf("ev-%d", f.event)
	f.mu.Unlock()
	chat := strings.TrimPrefix(id, "terminal:local:")

	// 1. The read: the inbound key, the session and its plan, from one snapshot.
	var rd floorRead
	conn, err := f.r.Conn(ctx)
	if err != nil {
		return err
	}
	err = func() error {
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		defer conn.ExecContext(ctx, "ROLLBACK")
		var one int
		switch err := conn.QueryRowContext(ctx, seenInboundQuery, "terminal", "local", event).Scan(&one); {
		case err == nil:
			return core.ErrDuplicate
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := conn.QueryRowContext(ctx, `SELECT version, phase, plan_id, approval_id FROM sessions WHERE id = ?`, id).
			Scan(&rd.version, &rd.phase, &rd.planID, &rd.approval); err != nil {
			return err
		}
		return conn.QueryRowContext(ctx, `SELECT version, status, body, approval_id FROM plans WHERE id = ?`, rd.planID).
			Scan(&rd.planVersion, &rd.status, &rd.body, &rd.planApprovalID)
	}()
	if err != nil {
		return fmt.Errorf("reading %s: %w", id, err)
	}
	if rd.phase != string(core.PhaseAwaitingApproval) || rd.status != string(core.PlanPending) || rd.approval != rd.planApprovalID {
		return fmt.Errorf("%s: phase %s, plan %s", id, rd.phase, rd.status)
	}

	rw, err := decisionRows(rd, event, chat)
	if err != nil {
		return err
	}
	at := rw.at

	// 2. The transaction, 3. durable before the caller hears of it.
	var ids [2]int64
	err = f.w.write(true, func(c *sql.Conn) error {
		if err := execOne(ctx, c, `INSERT INTO inbound (channel, account, event_id, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			"terminal", "local", event, at); err != nil {
			return fmt.Errorf("the inbound key: %w", err)
		}
		if err := execOne(ctx, c, `UPDATE sessions SET phase = 'executing', approval_id = NULL, injections = ?,
			version = version + 1, updated_at = ? WHERE id = ? AND version = ?`, rw.inj, at, id, rd.version); err != nil {
			return fmt.Errorf("the session's compare-and-set: %w", err)
		}
		if err := execOne(ctx, c, `UPDATE plans SET status = 'accepted', decision = ?, updated_at = ? WHERE id = ?`,
			rw.decision, at, rd.planID); err != nil {
			return err
		}
		if err := execOne(ctx, c, `INSERT INTO plan_events (session_id, plan_id, plan_version, kind, actor, channel, detail, at)
			VALUES (?, ?, ?, 'accepted', 'person:local', 'terminal', '', ?)`, id, rd.planID, rd.planVersion, at); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE nudges SET status = 'cancelled', next_fire_at = NULL WHERE session_id = ? AND status = 'active'`, id); err != nil {
			return err
		}
		for i, r := range rw.replies {
			res, err := c.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, owner) VALUES (?, 'terminal', ?, ?, ?)`,
				id, r, at, f.owner)
			if err != nil {
				return err
			}
			if ids[i], err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || acked {
		return err
	}

	// The turn's writes, lazy: the lease with the replies' marks, the turn's commit, the
	// release with the answer's mark.
	lease := "session:" + id
	if err := f.w.write(false, func(c *sql.Conn) error {
		if err := execOne(ctx, c, `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`, lease, f.owner, formatTime(rw.now.Add(time.Minute)), at); err != nil {
			return err
		}
		for _, row := range ids {
			if _, err := c.ExecContext(ctx, markSentQuery, at, "", row); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	answer, err := json.Marshal(core.Reply{To: rw.to, Text: "ok"})
	if err != nil {
		return err
	}
	var answerRow int64
	if err := f.w.write(false, func(c *sql.Conn) error {
		if err := execOne(ctx, c, `UPDATE sessions SET injections = '[]', version = version + 1, updated_at = ?
			WHERE id = ? AND version = ?`, at, id, rd.version+1); err != nil {
			return fmt.Errorf("the turn's compare-and-set: %w", err)
		}
		for _, m := range [][2]string{{"user", rw.injection}, {"assistant", "ok"}} {
			if _, err := c.ExecContext(ctx, `INSERT INTO messages (session_id, role, content, tool_call_id, name, at) VALUES (?, ?, ?, '', '', ?)`,
				id, m[0], m[1], at); err != nil {
				return err
			}
		}
		res, err := c.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, owner) VALUES (?, 'terminal', ?, ?, ?)`,
			id, string(answer), at, f.owner)
		if err != nil {
			return err
		}
		answerRow, err = res.LastInsertId()
		return err
	}); err != nil {
		return err
	}
	return f.w.write(false, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND owner = ?`, lease, f.owner); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, markSentQuery, at, "", answerRow)
		return err
	})
}

// floorRows is what a floor decision's rows hold: the injection for the agent (its text
// and the queue as JSON), the decision, the two replies, their address and the time.
type floorRows struct {
	injection, inj, decision string
	replies                  [2]string
	to                       core.Address
	now                      time.Time
	at                       string
}

// decisionRows makes the rows of accepting what rd read, as plangate writes them.
func decisionRows(rd floorRead, event, chat string) (floorRows, error) {
	var body plan.Body
	if err := json.Unmarshal([]byte(rd.body), &body); err != nil {
		return floorRows{}, err
	}
	r := floorRows{now: time.Now().UTC(), to: core.Address{Channel: "terminal", Account: "local", Chat: chat}}
	r.at = formatTime(r.now)
	steps := make([]string, len(body.Steps))
	for i, s := range body.Steps {
		steps[i] = fmt.Sprintf("%d. %s", i+1, s.Text)
	}
	r.injection = fmt.Sprintf("[PLAN_DECISION]: approved (approved by local)\nPlan v%d %q is accepted.\nSteps:\n%s", rd.planVersion, body.Title, strings.Join(steps, "\n"))
	inj, err := json.Marshal([]core.Injection{{Kind: "PLAN_DECISION", Text: r.injection}})
	if err != nil {
		return floorRows{}, err
	}
	decision, err := json.Marshal(plan.Decision{By: "local", ByName: "local", At: r.now, Channel: "terminal", Outcome: "accepted"})
	if err != nil {
		return floorRows{}, err
	}
	r.inj, r.decision = string(inj), string(decision)
	for i, reply := range []core.Reply{
		{To: r.to, Kind: "decided", Text: fmt.Sprintf("Plan v%d %q — accepted by local", rd.planVersion, body.Title), Ref: "r" + event},
		{To: r.to, Text: fmt.Sprintf("Accepted plan v%d %q. Working on it.", rd.planVersion, body.Title)},
	} {
		b, err := json.Marshal(reply)
		if err != nil {
			return floorRows{}, err
		}
		r.replies[i] = string(b)
	}
	return r, nil
}

// execOne runs a statement that must change exactly one row.
func execOne(ctx context.Context, c *sql.Conn, q string, args ...any) error {
	res, err := c.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%d rows changed, want 1: %s", n, q)
	}
	return nil
}

// check makes sure the floor did what it says to the last session: decided, and after
// its turn back at no injections with a transcript.
func (f *floor) check(b *testing.B, id string, acked bool) {
	var phase, inj string
	var version, msgs, unsent int64
	if err := f.r.QueryRow(`SELECT phase, injections, version FROM sessions WHERE id = ?`, id).Scan(&phase, &inj, &version); err != nil {
		b.Fatal(err)
	}
	if err := f.r.QueryRow(`SELECT count(*) FROM messages WHERE session_id = ?`, id).Scan(&msgs); err != nil {
		b.Fatal(err)
	}
	if err := f.r.QueryRow(`SELECT count(*) FROM outbox WHERE session_id = ? AND sent_at IS NULL`, id).Scan(&unsent); err != nil {
		b.Fatal(err)
	}
	want := struct {
		inj          bool
		version      int64
		msgs, unsent int64
	}{true, 2, 0, 2}
	if !acked {
		want.inj, want.version, want.msgs, want.unsent = false, 3, 2, 0
	}
	if phase != string(core.PhaseExecuting) || (inj != "[]") == !want.inj || version != want.version || msgs != want.msgs || unsent != want.unsent {
		b.Fatalf("the last session: phase %s, injections %s, version %d, %d messages, %d unsent; want executing, version %d, %d messages, %d unsent",
			phase, inj, version, msgs, unsent, want.version, want.msgs, want.unsent)
	}
}

// floorWriter is a minimal group commit on the single writer connection: whoever writes
// while a batch runs queues; when the batch has committed, the first queued leads the
// next one with everyone queued by then. Each write of a batch of several runs in a
// savepoint, so a failed one is undone alone.
type floorWriter struct {
	conn  *sql.Conn
	syncs *floorSync

	mu    sync.Mutex
	queue []*floorJob
	busy  bool
	txs   int64
}

type floorJob struct {
	run      func(*sql.Conn) error
	err      error
	ticket   uint64
	finished bool
	wake     chan struct{}
}

// write runs fn in the next batch and returns once it committed and, when durable, once
// an fsync of the -wal begun after the commit completed.
func (w *floorWriter) write(durable bool, fn func(*sql.Conn) error) error {
	j := &floorJob{run: fn, wake: make(chan struct{}, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, j)
	lead := !w.busy
	w.busy = true
	w.mu.Unlock()
	if lead {
		w.lead()
	}
	for !j.finished {
		<-j.wake
		if !j.finished {
			w.lead()
		}
	}
	if j.err != nil || !durable {
		return j.err
	}
	w.syncs.wait(j.ticket)
	return w.syncs.err
}

func (w *floorWriter) lead() {
	ctx := context.Background()
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.txs++
	w.mu.Unlock()

	err := w.run(ctx, batch)
	t := w.syncs.ticket()
	w.mu.Lock()
	var next *floorJob
	if len(w.queue) > 0 {
		next = w.queue[0]
	} else {
		w.busy = false
	}
	w.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	for _, j := range batch {
		if j.err == nil {
			j.err = err
		}
		j.ticket = t
		j.finished = true
		j.wake <- struct{}{}
	}
}

func (w *floorWriter) run(ctx context.Context, batch []*floorJob) error {
	c := w.conn
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if len(batch) == 1 {
		batch[0].err = batch[0].run(c)
	} else {
		for _, j := range batch {
			if _, err := c.ExecContext(ctx, "SAVEPOINT change"); err != nil {
				c.ExecContext(ctx, "ROLLBACK")
				return err
			}
			if j.err = j.run(c); j.err != nil {
				if _, err := c.ExecContext(ctx, "ROLLBACK TO change"); err != nil {
					c.ExecContext(ctx, "ROLLBACK")
					return err
				}
			}
			if _, err := c.ExecContext(ctx, "RELEASE change"); err != nil {
				c.ExecContext(ctx, "ROLLBACK")
				return err
			}
		}
	}
	_, err := c.ExecContext(ctx, "COMMIT")
	if err != nil {
		c.ExecContext(ctx, "ROLLBACK")
	}
	return err
}

// floorSync shares fdatasyncs of the -wal among the durable callers: one runs at a time,
// and a caller waits for the first that began after its commit.
type floorSync struct {
	f *os.File

	mu            sync.Mutex
	cond          *sync.Cond
	started, done uint64
	running       bool
	runs          int64
	err           error
}

func (s *floorSync) ticket() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started + 1
}

func (s *floorSync) wait(t uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.done < t && s.err == nil {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		gen := s.started
		s.mu.Unlock()
		err := syscall.Fdatasync(int(s.f.Fd()))
		s.mu.Lock()
		s.running = false
		s.runs++
		if err != nil {
			s.err = err
		} else {
			s.done = gen
		}
		s.cond.Broadcast()
	}
}

// rawCommits is BenchmarkSQLiteCommit's single-row fsynced commit, in chunks.
type rawCommits struct {
	db *sql.DB
	i  int
}

func openRaw(b *testing.B, path string) *rawCommits {
	abs, err := filepath.Abs(path)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", strings.Replace(writerDSN(abs), "_synchronous=NORMAL", "_synchronous=FULL", 1))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return &rawCommits{db: db}
}

// commits runs n single-row fsynced commits and returns how long they took.
func (r *rawCommits) commits(b *testing.B, n int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for range n {
		r.i++
		tx, err := r.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, fmt.Sprint(r.i)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
