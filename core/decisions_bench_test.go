package core_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// benchDecisions sets up b.N pending plans, then accepts them from sessions goroutines,
// each taking the next plan when its last decision is handled. syncs/decision counts the
// store's fsynced transactions per decision, writes/decision its writes (commits),
// txs/decision the transactions they took (writes arriving together share one),
// sync-waits/decision the durable writes that waited for an fsync (several share one),
// file-writes/decision the plan files written (after the turns, the file writer drained);
// cpu-µs/decision is the process's CPU (user and system, every goroutine) in the timed
// part, which moves less with the other jobs on the machine than the rates do.
//
// acked: a decision is done when its acknowledgement is sent; the turns it starts wait at
// the model until the timer stops (see BenchmarkEngineDecisions).
//
// DECISIONS_CPUPROFILE=<prefix> writes a CPU profile of the timed part alone (the setup
// of the pending plans is most of a -cpuprofile) to <prefix>-<case>.prof, the case's name
// with '/' as '-'.
func benchDecisions(b *testing.B, driver string, sessions int, acked bool) {
	var (
		h     *harness
		rates func() (conc, serial float64)
	)
	if driver == store.DriverPostgres {
		h = newHarnessOn(b, driver, pgtest.Schema(b))
		rates = func() (float64, float64) { return rawInsertRate(b, h.target, sessions), rawInsertRate(b, h.target, 1) }
	} else {
		h = newHarness(b)
		rates = func() (float64, float64) { return rawCommitRate(b, h.dir), 0 }
	}
	ctx := context.Background()
	chats := make([]string, b.N)
	for i := range chats {
		chats[i] = fmt.Sprintf("d-%d", i)
		h.toPending(chats[i], "Decision bench")
	}
	decide := func(chat string) error {
		return h.eng.Handle(ctx, core.Message{Address: addr(chat), Sender: core.Person{ID: "local"}, Text: "/plan accept"})
	}
	var turns []<-chan error
	if acked {
		decide, turns = ackedDecisions(b, h, chats)
	}
	raw, serial := rates()
	st0 := h.st.GroupStats()
	fw0 := core.PlanFileWrites(h.eng)
	b.ResetTimer()
	stopProfile := coretest.TimedProfile(b, "DECISIONS_CPUPROFILE", "DECISIONS_MEMPROFILE")
	cpu0 := coretest.ProcessCPU(b)
	start := time.Now()
	failed := coretest.Parallel(sessions, len(chats), func(i int) error { return decide(chats[i]) })
	elapsed := time.Since(start)
	cpu := coretest.ProcessCPU(b) - cpu0
	stopProfile()
	b.StopTimer()
	st := h.st.GroupStats()
	if failed != nil {
		b.Fatal(failed)
	}
	if acked {
		h.model.Unblock()
		for _, done := range turns {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := h.eng.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	fw := core.PlanFileWrites(h.eng)
	if s := h.session(chats[len(chats)-1]); s.Phase != core.PhaseExecuting {
		b.Fatalf("the last decision left phase %s, want executing", s.Phase)
	}
	raw2, serial2 := rates()
	raw, serial = (raw+raw2)/2, (serial+serial2)/2
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "decisions/s")
	b.ReportMetric(raw, "raw-commits/s")
	b.ReportMetric(rate/raw, "ratio")
	if serial > 0 {
		b.ReportMetric(serial, "raw-serial-commits/s")
		b.ReportMetric(rate/serial, "ratio-serial")
	}
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-µs/decision")
	if driver == store.DriverSQLite { // PostgreSQL's server groups commits itself
		b.ReportMetric(float64(st.Durable-st0.Durable)/float64(b.N), "syncs/decision")
		b.ReportMetric(float64(st.Writes-st0.Writes)/float64(b.N), "writes/decision")
		b.ReportMetric(float64(st.Batches-st0.Batches)/float64(b.N), "txs/decision")
		b.ReportMetric(float64(st.Waited-st0.Waited)/float64(b.N), "sync-waits/decision")
	}
	b.ReportMetric(float64(fw-fw0)/float64(b.N), "file-writes/decision")
}

// rawCommitRate measures single-row fsynced commits per second in dir with the store's
// settings (WAL, synchronous=FULL, immediate transactions): the ceiling a decision is
// compared with, taken on the same disk in the same run.
func rawCommitRate(b *testing.B, dir string) float64 {
	b.Helper()
	ctx := context.Background()
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("raw-%d.db", time.Now().UnixNano())))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	const n = 100
	start := time.Now()
	for i := range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return n / time.Since(start).Seconds()
}

// rawInsertRate measures single-row insert transactions per second on the PostgreSQL
// schema at dsn, from conc goroutines (a pool as large as the store's): the ceiling a
// decision is compared with on that server, in the same run.
func rawInsertRate(b *testing.B, dsn string, conc int) float64 {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn+" pool_max_conns=16")
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	insert := pgtest.Inserts(b, pool)
	const each = 100
	start := time.Now()
	if err := coretest.Parallel(conc, conc*each, insert); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	return float64(conc*each) / elapsed.Seconds()
}

// ackedDecisions blocks the model and returns a decide that enqueues /plan accept for a
// chat and returns once "Accepted plan" was sent there, and the jobs it enqueued (each
// ends when its turn, released by Unblock, has).
func ackedDecisions(b *testing.B, h *harness, chats []string) (func(string) error, []<-chan error) {
	h.model.Block(make(chan struct{}))
	b.Cleanup(h.model.Unblock)
	acks := make(map[string]chan struct{}, len(chats))
	for _, c := range chats {
		acks[addr(c).Chat] = make(chan struct{}, 1)
	}
	h.out.mu.Lock()
	h.out.onSend = func(r core.Reply) {
		if ch := acks[r.To.Chat]; ch != nil && strings.HasPrefix(r.Text, "Accepted plan") {
			ch <- struct{}{}
		}
	}
	h.out.mu.Unlock()
	jobs := make([]<-chan error, len(chats))
	var mu sync.Mutex
	next := 0
	return func(chat string) error {
		done := h.eng.Enqueue(context.Background(), core.Message{Address: addr(chat), Sender: core.Person{ID: "local"}, Text: "/plan accept"})
		mu.Lock()
		jobs[next] = done
		next++
		mu.Unlock()
		select {
		case <-acks[addr(chat).Chat]:
			return nil
		case err := <-done:
			return fmt.Errorf("the decision in %s ended before its acknowledgement: %v", chat, err)
		}
	}, jobs
}
