package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plangate/plangate/core"
)

// A transition is built as a list of steps first and executed second, so that its SQL is
// written once and each engine runs it the fastest way: SQLite statement by statement on
// its writer connection (a round trip costs nothing there), PostgreSQL as one pipelined
// batch, then COMMIT or ROLLBACK once the outcomes were checked. Either way the checks
// run in step order, so a duplicate inbound event is reported before anything later.

// step is one statement of a transition with the check of its outcome.
type step struct {
	what string // "-ing" context for an error of the statement itself
	q    string // '?' placeholders (see dialect)
	args []any
	// Exec steps: unless nil, zero affected rows fails the transition with this error.
	none error
	// QueryRow steps (dest != nil): the returned row is scanned into dest; no row fails
	// the transition with none; then, unless nil, runs after a successful scan.
	dest []any
	then func() error
	// lastID (SQLite only, Exec steps): where the rowid the statement inserted goes, once
	// it succeeded (before then).
	lastID *int64
	// orElse (SQLite only, Exec steps): when the statement changed no row, orElse runs in
	// its place and its outcome is the step's. PostgreSQL's pipelined batch cannot wait
	// for one statement's count before sending the next, so its steps never carry one.
	orElse *step
}

// outcome checks what a step's statement did; err is the statement's own error.
func (st step) outcome(n int64, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows): // pgx.ErrNoRows wraps it
		if st.none != nil {
			return st.none
		}
		return fmt.Errorf("%s: %w", st.what, err)
	case err != nil:
		return fmt.Errorf("%s: %w", st.what, err)
	case st.dest == nil && st.none != nil && n == 0:
		return st.none
	case st.then != nil:
		return st.then()
	}
	return nil
}

// errUnchanged is the none of a conditional write whose row was gone, changed, or not
// this caller's to take; it never leaves the package.
var errUnchanged = errors.New("no row changed")

// changed runs st as a transaction of its own and reports whether it changed a row.
func (s *Store) changed(ctx context.Context, lazy bool, st step) (bool, error) {
	st.none = errUnchanged
	err := s.runSteps(ctx, []step{st}, lazy)
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return err == nil, err
}

// runSteps executes steps in one transaction and commits it if every outcome is as
// expected; otherwise nothing of it remains.
func (s *Store) runSteps(ctx context.Context, steps []step, lazy bool) error {
	if s.pool != nil {
		return asConflict(s.runBatch(ctx, steps, lazy))
	}
	// SQLite: through the writer's queue, so concurrent transitions share one transaction
	// and one fsync (group commit, see group.go), each in its own savepoint.
	return s.write(ctx, lazy, func(ctx context.Context, tx *sql.Conn, _ time.Time) error {
		return execSteps(ctx, tx, steps)
	})
}

// execSteps runs steps in order inside tx, the SQLite writer's connection in its open
// transaction (no placeholder renumbering), and stops at the first unexpected outcome.
func execSteps(ctx context.Context, tx *sql.Conn, steps []step) error {
	for _, st := range steps {
		if st.dest != nil {
			err := tx.QueryRowContext(ctx, st.q, st.args...).Scan(st.dest...)
			if err := st.outcome(1, err); err != nil {
				return err
			}
			continue
		}
		var n int64
		res, err := tx.ExecContext(ctx, st.q, st.args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 0 && st.orElse != nil {
			if err := execSteps(ctx, tx, []step{*st.orElse}); err != nil {
				return err
			}
			continue
		}
		if err == nil && st.lastID != nil {
			*st.lastID, err = res.LastInsertId()
		}
		if err := st.outcome(n, err); err != nil {
			return err
		}
	}
	return nil
}

// runBatch is runSteps on PostgreSQL: BEGIN and the steps in one pipelined batch, then
// COMMIT, or ROLLBACK when an outcome is not as expected. When no outcome can call for a
// rollback (oneTrip), COMMIT goes in the same batch: one round trip.
func (s *Store) runBatch(ctx context.Context, steps []step, lazy bool) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("getting a connection: %w", err)
	}
	defer c.Release()
	trip := oneTrip(steps)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if lazy {
		// SET LOCAL ends with the transaction: no later commit can run relaxed.
		b.Queue("SET LOCAL synchronous_commit = off")
	}
	for _, st := range steps {
		b.Queue(postgresDialect.q(st.q), st.args...)
	}
	if trip {
		b.Queue("COMMIT")
	}
	br := c.SendBatch(ctx, b)
	err = checkBatch(br, steps, lazy, trip)
	var commitErr error // with trip: why the COMMIT sent in the batch did not commit
	if trip {
		// Only a lone statement may have an unexpected outcome (no row), which changed
		// nothing: the COMMIT already sent commits nothing else. Any other failure aborted
		// the transaction, and the server answers the COMMIT with an error or ROLLBACK.
		if tag, cerr := br.Exec(); cerr != nil {
			commitErr = cerr
		} else if tag.String() != "COMMIT" {
			commitErr = errors.New("the server did not commit")
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("running the transaction: %w", cerr)
	}
	if trip && commitErr == nil {
		return err // committed
	}
	if trip && err == nil {
		err = fmt.Errorf("committing transaction: %w", commitErr)
	}
	if err != nil {
		if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			// The connection is in an unknown state: do not give it back to the pool.
			c.Conn().Close(context.WithoutCancel(ctx))
		}
		return err
	}
	// A deferred constraint (sessions.plan_id) is checked here. The tag is checked too:
	// PostgreSQL answers COMMIT in a failed transaction with ROLLBACK, not an error.
	tag, err := c.Exec(ctx, "COMMIT")
	if err != nil {
		return fmt.Errorf("committing transaction: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("committing transaction: the server answered %s", tag)
	}
	return nil
}

// oneTrip reports whether steps may be committed in the batch that runs them, before
// their outcomes are read: when no step checks its outcome (only a statement's own error,
// which aborts the transaction, can fail them), or the only step does without a Go check
// (a statement that affected no row changed nothing).
func oneTrip(steps []step) bool {
	for _, st := range steps {
		if st.then != nil || st.none != nil && len(steps) > 1 {
			return false
		}
	}
	return true
}

// checkBatch reads the batch's results in order and returns the first unexpected one.
// With all it reads every step's result even so, for the COMMIT queued after them.
func checkBatch(br pgx.BatchResults, steps []step, lazy, all bool) error {
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	if lazy {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("relaxing synchronous_commit for a lazy commit: %w", err)
		}
	}
	var first error
	for _, st := range steps {
		var err error
		if st.dest != nil {
			err = st.outcome(1, br.QueryRow().Scan(st.dest...))
		} else {
			tag, xerr := br.Exec()
			err = st.outcome(tag.RowsAffected(), xerr)
		}
		if err != nil && first == nil {
			first = err
		}
		if first != nil && !all {
			break
		}
	}
	return first
}

// asConflict adds core.ErrConflict to a PostgreSQL deadlock or serialization failure: the
// server rolled back because another transaction touched the same rows, which to the
// caller means what a lost compare-and-set does (nothing changed; try again).
func asConflict(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
		return fmt.Errorf("%w: %w", err, core.ErrConflict)
	}
	return err
}
