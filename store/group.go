package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
)

// writeFunc is one caller's write: it runs on the writer connection inside the batch's
// transaction (inside its own savepoint when the batch holds others) and reports whether
// it must be undone.
type writeFunc func(ctx context.Context, tx *sql.Conn, now time.Time) error

// writeJob is one caller waiting in the writer's queue.
type writeJob struct {
	ctx  context.Context // checked once before the job runs; statements never see it
	lazy bool
	run  writeFunc
	// merge, when set, names a record the job replaces whole: of the jobs of one batch
	// with the same merge, only the last runs and the others share its outcome (see
	// writeMerged).
	merge string

	// Set by the leader before it wakes the caller (the channel send orders them).
	err      error
	ticket   uint64 // the fsync that covers the batch's commit (walSync.ticket)
	finished bool
	wake     chan struct{} // finished, or: lead the next batch
}

// groupCommit is the single writer's queue. Whoever writes while a batch is in flight
// waits; when it committed, the first waiter leads the next batch, holding everyone who
// arrived meanwhile. A batch is one transaction at synchronous=NORMAL, whose durable
// callers then wait for an fsync outside the writer (walsync.go) while the next runs.
type groupCommit struct {
	mu    sync.Mutex
	queue []*writeJob
	busy  bool // a leader is running a batch
	stats GroupStats
}

// write runs fn on the writer connection as part of the next batch and returns once the
// batch has committed (or fn failed and was undone) and, unless lazy, once an fsync of
// the WAL begun after that commit completed. A lazy write survives a killed process; a
// power loss may take it (and only commits after it).
//
// ctx is consulted before fn runs, not during: an interrupted statement would roll back
// the whole shared transaction, and a caller whose change may be committed must learn
// the outcome rather than stop waiting.
func (s *Store) write(ctx context.Context, lazy bool, fn writeFunc) error {
	return s.writeMerged(ctx, lazy, "", fn)
}

// writeMerged is write for a job that replaces the record named merge whole, with a
// value fn computes when it runs: when several such jobs share a batch only the last
// runs, and its value, computed last, holds whatever the earlier ones would have written.
func (s *Store) writeMerged(ctx context.Context, lazy bool, merge string, fn writeFunc) error {
	j := &writeJob{ctx: ctx, lazy: lazy, run: fn, merge: merge, wake: make(chan struct{}, 1)}
	g := s.gc
	g.mu.Lock()
	g.queue = append(g.queue, j)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if lead {
		s.lead()
	}
	for {
		<-j.wake
		if j.finished {
			break
		}
		s.lead() // handed the lead: j is in the batch this runs
	}
	if j.lazy || s.ws == nil || !reportsCommitted(j.err) {
		return j.err
	}
	// Outside the writer: the next batch is already running.
	if err := s.ws.wait(j.ticket); err != nil {
		return err
	}
	return j.err
}

// reportsCommitted tells whether a durable write's outcome speaks of committed state: its
// own commit, or a conflict or duplicate with an earlier commit. Both wait for the fsync,
// so that no caller tells of a change a power loss could still take (a redelivered event
// is not acknowledged on the strength of an unsynced original).
func reportsCommitted(err error) bool {
	return err == nil || errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrDuplicate)
}

// lead runs one batch: everything queued now. Then it hands the lead to the first job
// that arrived meanwhile (so no caller keeps leading under sustained load) and wakes the
// batch's callers (handOff).
func (s *Store) lead() {
	g := s.gc
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.stats.Batches++
	g.stats.Writes += int64(len(batch))
	g.mu.Unlock()

	defer s.handOff(batch)
	s.runGroup(batch)
	if s.ws != nil {
		// Taken after the batch, committed or not: it covers the batch's commit and every
		// commit its writes saw.
		t := s.ws.ticket()
		for _, j := range batch {
			j.ticket = t
		}
	}
}

// handOff passes the lead to the first job that arrived during the batch, or idles the
// writer, and wakes the batch's callers. It runs even when a write panicked (a caller may
// recover), so the queue never stays blocked; the panicking batch's callers get an error.
func (s *Store) handOff(batch []*writeJob) {
	if p := recover(); p != nil {
		for _, j := range batch {
			if j.err == nil {
				j.err = fmt.Errorf("a write in the same batch panicked: %v", p)
			}
		}
		defer panic(p)
	}
	g := s.gc
	g.mu.Lock()
	var next *writeJob
	if len(g.queue) > 0 {
		next = g.queue[0]
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	for _, j := range batch {
		j.finished = true
		j.wake <- struct{}{}
	}
}

// runGroup commits the batch's writes in one IMMEDIATE transaction, each write inside a
// SAVEPOINT when there are several, so one that fails (a version conflict, a duplicate)
// is rolled back alone. Every job's err is set: its own failure, or the transaction's.
// Once an fsync failed, durable jobs fail without running; lazy ones still commit.
func (s *Store) runGroup(batch []*writeJob) {
	ctx := context.Background()
	live := batch[:0:0]
	var unsynced error
	if s.ws != nil {
		unsynced = s.ws.failed()
	}
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		if !j.lazy && unsynced != nil {
			j.err = unsynced
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	live, merged := mergeJobs(live)
	defer func() {
		for j, last := range merged {
			j.err = last.err
		}
	}()
	fail := func(err error) {
		for _, j := range live {
			if j.err == nil {
				j.err = err
			}
		}
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		fail(fmt.Errorf("getting the writer connection: %w", err))
		return
	}
	defer conn.Close()
	// The transaction is statements on the connection, not a database/sql Tx: a Tx
	// starts a goroutine to watch its context and makes every QueryRow in it start
	// another (the RETURNING of a session update, of an outbox row), each a wake-up of
	// the scheduler, for a context that is never cancelled here.
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		fail(fmt.Errorf("beginning transaction: %w", explain(err)))
		return
	}
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, conn)
		}
	}()

	now := s.now().UTC()
	if err := runJobs(ctx, conn, live, now); err != nil {
		fail(err)
		return
	}
	if !slices.ContainsFunc(live, func(j *writeJob) bool { return j.err == nil }) {
		return // every write failed and was undone
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		// As the driver's Tx.Commit does: SQLite may leave the transaction open.
		fail(fmt.Errorf("committing transaction: %w", explain(err)))
		return
	}
	committed = true
}

// rollback ends conn's open transaction, if any. A connection that cannot end it is taken
// out of the pool (the next use opens a fresh one) rather than handed on inside one.
func rollback(ctx context.Context, conn *sql.Conn) {
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err == nil {
		return
	}
	// "no transaction is active" (SQLite ended it itself after the error) is no failure.
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok && !c.AutoCommit() {
			return driver.ErrBadConn
		}
		return nil
	})
}

// mergeJobs drops from live every job that a later job with the same merge replaces;
// merged maps each dropped job to the one that runs for it.
func mergeJobs(live []*writeJob) (kept []*writeJob, merged map[*writeJob]*writeJob) {
	last := map[string]*writeJob{}
	for _, j := range live {
		if j.merge != "" {
			last[j.merge] = j
		}
	}
	if len(last) == 0 {
		return live, nil
	}
	kept = live[:0:0]
	for _, j := range live {
		if l := last[j.merge]; j.merge != "" && l != j {
			if merged == nil {
				merged = map[*writeJob]*writeJob{}
			}
			merged[j] = l
			continue
		}
		kept = append(kept, j)
	}
	return kept, merged
}

// runJobs runs each job, alone (no savepoint needed: the transaction is its own) or in a
// savepoint. It returns an error only when the transaction itself can no longer be
// trusted; a job's own failure goes into its err.
func runJobs(ctx context.Context, tx *sql.Conn, live []*writeJob, now time.Time) error {
	if len(live) == 1 {
		live[0].err = live[0].run(ctx, tx, now)
		return nil
	}
	for _, j := range live {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT change"); err != nil {
			return fmt.Errorf("opening a savepoint: %w", explain(err))
		}
		j.err = j.run(ctx, tx, now)
		if j.err != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO change"); err != nil {
				return errors.Join(j.err, fmt.Errorf("rolling back to the savepoint: %w", explain(err)))
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE change"); err != nil {
			return fmt.Errorf("releasing the savepoint: %w", explain(err))
		}
	}
	return nil
}

// GroupStats counts what the writer ran since the store was opened: Writes callers in
// Batches transactions; Durable fsyncs of the WAL for durable writes (SQLite's own
// checkpoints add theirs), Waited durable writes (tool runs included) that waited for
// one. Waited per Durable is how many commits shared each.
type GroupStats struct {
	Batches, Writes, Durable, Waited int64
}

// GroupStats reports the writer's counts, for benchmarks and tests of the sharing; all
// zero on PostgreSQL, whose server groups its commits itself.
func (s *Store) GroupStats() GroupStats {
	if s.gc == nil {
		return GroupStats{}
	}
	s.gc.mu.Lock()
	st := s.gc.stats
	s.gc.mu.Unlock()
	if s.ws != nil {
		s.ws.mu.Lock()
		st.Durable, st.Waited = s.ws.syncs, s.ws.waited
		s.ws.mu.Unlock()
	}
	return st
}
