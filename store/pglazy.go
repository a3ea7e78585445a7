package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lazy writes on PostgreSQL (outbox marks, leases, lazy transitions) go through the same
// queue as SQLite's writes (group.go): whoever writes while a batch is in flight waits,
// and the next batch carries everyone who arrived meanwhile, in one transaction and one
// round trip. Durable transitions are not queued: PostgreSQL already lets commits waiting
// for the same WAL flush complete together, and each keeps its own latency.
//
// A shared batch cannot roll back one member alone (a savepoint's rollback would have to
// be decided before the batch is sent), so it is all or nothing: a one-statement member
// is sent unguarded (affecting no row changed nothing, and its outcome is its own), a
// longer member guarded as when alone (pgbatch.go). When the batch did not commit —
// a member's compare-and-set lost, a statement failed — nothing of it remains, and each
// member runs again alone and learns its own outcome. Every caller returns only after
// the transaction holding its change has committed.

// sharedTimeout bounds a shared batch, which runs apart from its callers' contexts (one
// caller's cancellation must not undo the others' writes).
const sharedTimeout = 30 * time.Second

// runPGGroup runs the batch's lazy writes, sharing a transaction when there are several.
func (s *Store) runPGGroup(batch []*writeJob) {
	live := batch[:0:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		if err := checkGuardable(j.steps); err != nil {
			j.err = err
			continue
		}
		live = append(live, j)
	}
	if len(live) > 1 && s.runShared(live) {
		return
	}
	for _, j := range live {
		j.err = s.runBatch(j.ctx, j.steps, true)
	}
}

// runShared runs live's steps in one lazy transaction and reports whether it committed;
// then each job's err is its own outcome. When it did not, no job's change was kept.
func (s *Store) runShared(live []*writeJob) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return false
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	for _, j := range live {
		for _, st := range j.steps {
			b.Queue(st.pgText(len(j.steps) > 1), st.args...)
		}
	}
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	commitErr := readShared(br, live)
	if cerr := br.Close(); commitErr == nil && cerr != nil {
		commitErr = cerr
	}
	if commitErr == nil {
		s.gc.mu.Lock()
		s.gc.stats.Shared++
		s.gc.mu.Unlock()
		return true
	}
	for _, j := range live {
		j.err = nil
	}
	if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
		c.Conn().Close(context.WithoutCancel(ctx))
	}
	return false
}

// readShared reads a shared batch's results into each job's err and returns nil only
// when the server committed.
func readShared(br pgx.BatchResults, live []*writeJob) error {
	for range 2 { // BEGIN, SET LOCAL
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("beginning transaction: %w", err)
		}
	}
	for _, j := range live {
		for _, st := range j.steps {
			err := readStep(br, st, len(j.steps) > 1)
			if j.err == nil && err != nil {
				j.err = err
			}
		}
		if j.err != nil && (len(j.steps) > 1 || !errors.Is(j.err, j.steps[0].none)) {
			// Not the outcome of a statement that changed nothing: if the batch commits
			// anyway (a client-side scan error), say so.
			j.err = fmt.Errorf("the change was committed, but reading it back failed: %w", j.err)
		}
	}
	tag, err := br.Exec()
	switch {
	case err != nil:
		return fmt.Errorf("committing transaction: %w", err)
	case tag.String() != "COMMIT":
		return fmt.Errorf("committing transaction: the server answered %s", tag)
	}
	return nil
}
