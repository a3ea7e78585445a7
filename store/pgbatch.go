package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A transaction on PostgreSQL is one round trip: BEGIN, every step and COMMIT go in one
// pipelined batch, before any outcome is known. That is only safe if an unexpected
// outcome fails on the server, aborting the transaction so that the server skips the
// COMMIT: a step whose outcome is checked (none, or a row to scan) is sent guarded —
// wrapped so that affecting no row raises division_by_zero (noRowCode) in the step
// itself — and that error at that step is reported as the step's none. The guard is a
// top-level output column of a FROM-less SELECT, which PostgreSQL always computes.
// A commit used to cost two round trips (the batch, then COMMIT after the checks),
// which on a loaded host was a large share of a decision's time.

// noRowCode is the SQLSTATE a guarded step raises when it affected no row. None of the
// store's statements divides, so it cannot come from anything else.
const noRowCode = "22012"

// pgText is the step's statement as sent to PostgreSQL, guarded when checked.
func (st step) pgText() string {
	q := postgresDialect.q(st.q)
	switch {
	case st.dest != nil:
		// "... RETURNING a, b" → each column as a scalar subquery, plus the guard
		// (checkGuardable made sure there is a RETURNING list of plain columns).
		i := strings.LastIndex(q, "RETURNING ")
		var cols []string
		for _, c := range strings.Split(q[i+len("RETURNING "):], ",") {
			cols = append(cols, "(SELECT "+strings.TrimSpace(c)+" FROM r)")
		}
		return "WITH r AS (" + q + ") SELECT " + strings.Join(cols, ", ") + ", 1 / (SELECT count(*)::int FROM r)"
	case st.none != nil:
		return "WITH r AS (" + q + " RETURNING 1) SELECT 1 / (SELECT count(*)::int FROM r)"
	}
	return q
}

// checkGuardable refuses a step that scans a row it cannot guard: the row must come from
// "INSERT/UPDATE/DELETE ... RETURNING col, col" (a programming error, found by any test
// that runs the step on PostgreSQL).
func checkGuardable(steps []step) error {
	for _, st := range steps {
		if st.dest == nil {
			continue
		}
		i := strings.LastIndex(st.q, "RETURNING ")
		if i < 0 || strings.ContainsAny(st.q[i:], "()") || len(strings.Split(st.q[i:], ",")) != len(st.dest) {
			return fmt.Errorf("%s: a scanned row must come from RETURNING with one plain column per destination", st.what)
		}
	}
	return nil
}

// runBatch is runSteps on PostgreSQL: one batch of BEGIN, the steps and COMMIT. When the
// server did not commit, the transaction is rolled back; nothing of it remains.
func (s *Store) runBatch(ctx context.Context, steps []step, lazy bool) error {
	if err := checkGuardable(steps); err != nil {
		return err
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("getting a connection: %w", err)
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if lazy {
		// SET LOCAL ends with the transaction: no later commit can run relaxed.
		b.Queue("SET LOCAL synchronous_commit = off")
	}
	for _, st := range steps {
		b.Queue(st.pgText(), st.args...)
	}
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	stepErr, commitErr := readBatch(br, steps, lazy)
	if cerr := br.Close(); commitErr == nil && cerr != nil {
		commitErr = fmt.Errorf("running the transaction: %w", cerr)
	}
	if commitErr == nil {
		if stepErr != nil {
			return fmt.Errorf("the change was committed, but reading it back failed: %w", stepErr)
		}
		return nil
	}
	// A failure aborted the transaction and the server skipped COMMIT, or the connection
	// failed: end the transaction either way.
	if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
		// The connection is in an unknown state: do not give it back to the pool.
		c.Conn().Close(context.WithoutCancel(ctx))
	}
	if stepErr != nil {
		return stepErr
	}
	return commitErr
}

// readBatch reads every result in order. stepErr is the first unexpected step outcome;
// commitErr is nil only when the server committed. A deferred constraint
// (sessions.plan_id) fails at COMMIT; PostgreSQL answers COMMIT in a failed transaction
// with ROLLBACK, not an error, so the tag is checked.
func readBatch(br pgx.BatchResults, steps []step, lazy bool) (stepErr, commitErr error) {
	first := func(err error) {
		if stepErr == nil {
			stepErr = err
		}
	}
	if _, err := br.Exec(); err != nil {
		first(fmt.Errorf("beginning transaction: %w", err))
	}
	if lazy {
		if _, err := br.Exec(); err != nil {
			first(fmt.Errorf("relaxing synchronous_commit for a lazy commit: %w", err))
		}
	}
	for _, st := range steps {
		first(readStep(br, st))
	}
	tag, err := br.Exec()
	switch {
	case err != nil:
		commitErr = fmt.Errorf("committing transaction: %w", err)
	case tag.String() != "COMMIT":
		commitErr = fmt.Errorf("committing transaction: the server answered %s", tag)
	}
	return stepErr, commitErr
}

// readStep reads one step's result and checks its outcome; a guarded step that raised
// noRowCode affected no row.
func readStep(br pgx.BatchResults, st step) error {
	var err error
	n := int64(1) // a guarded step that did not raise affected a row
	switch {
	case st.dest != nil:
		var guard int
		err = br.QueryRow().Scan(append(st.dest[:len(st.dest):len(st.dest)], &guard)...)
	case st.none != nil:
		_, err = br.Exec()
	default:
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		n = tag.RowsAffected()
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == noRowCode {
		err = pgx.ErrNoRows
		if st.dest == nil {
			err, n = nil, 0
		}
	}
	return st.outcome(n, err)
}
