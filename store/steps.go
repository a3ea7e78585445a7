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

// A transition is built as a list of steps first and executed second, so that the SQL of
// a Commit is written once and each engine runs it the way it is fastest: SQLite
// statement by statement on its writer connection (a round trip costs nothing there),
// PostgreSQL as one pipelined batch (BEGIN, every statement and COMMIT in a single round
// trip, see pgbatch.go), which costs fewer round trips than a transaction inserting one
// row through BEGIN, INSERT and COMMIT. Either way the checks run in step order, so
// a duplicate inbound event is reported before anything later in the change could fail.

// step is one statement of a transition with the check of its outcome.
type step struct {
	what string // "-ing" context for an error of the statement itself
	q    string // '?' placeholders (see dialect)
	args []any
	// Exec steps: unless nil, zero affected rows fails the transition with this error.
	none error
	// QueryRow steps (dest != nil): the returned row is scanned into dest; no row fails
	// the transition with none; then, unless nil, runs after a successful scan. then may
	// fail only on a stored value it cannot read: on PostgreSQL it runs after the COMMIT
	// was sent (a failure is then reported as committed but unreadable).
	dest []any
	then func() error
}

// outcome checks what a step's statement did; err is the statement's own error.
func (st step) outcome(n int64, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows):
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

// runSteps executes steps in one transaction and commits it if every outcome is as
// expected; otherwise nothing of it remains.
func (s *Store) runSteps(ctx context.Context, steps []step, lazy bool) error {
	if s.pool != nil {
		return asConflict(s.runBatch(ctx, steps, lazy))
	}
	// SQLite: through the writer's queue, so concurrent transitions share one transaction
	// and one fsync (group commit, see group.go), each in its own savepoint.
	return s.write(ctx, lazy, func(ctx context.Context, tx *sql.Tx, _ time.Time) error {
		return execSteps(ctx, &sqlTx{Tx: tx, d: sqliteDialect}, steps)
	})
}

// execSteps runs steps in order inside tx and stops at the first unexpected outcome.
func execSteps(ctx context.Context, tx *sqlTx, steps []step) error {
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
		if err := st.outcome(n, err); err != nil {
			return err
		}
	}
	return nil
}

// beginWrite starts a write transaction on SQLite's writer connection. A lazy one may
// commit without waiting for the disk (see Change.Lazy). done rolls back what was not
// committed and undoes the relaxation; call it (deferred) in every case.
func (s *Store) beginWrite(ctx context.Context, lazy bool) (t *sqlTx, done func(), err error) {
	c, err := s.w.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("getting the writer connection: %w", err)
	}
	restore := func() {}
	if lazy {
		if restore, err = relaxSync(ctx, c); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	if t, err = c.BeginTx(ctx, nil); err != nil {
		restore()
		c.Close()
		return nil, nil, fmt.Errorf("beginning transaction: %w", err)
	}
	return t, func() {
		_ = t.Rollback() // a no-op after Commit
		restore()
		c.Close()
	}, nil
}

// asConflict adds core.ErrConflict to a PostgreSQL deadlock or serialization failure: the
// server rolled the transaction back because another one touched the same rows at the
// same moment, which is what a lost compare-and-set means to the caller (nothing was
// changed; try again).
func asConflict(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
		return fmt.Errorf("%w: %w", err, core.ErrConflict)
	}
	return err
}
