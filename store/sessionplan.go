package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plangate/plangate/core"
)

// SessionPlan returns the stored session id and its current plan (nil when it has none),
// or an error wrapping core.ErrNotFound: what a person's message reads first. Both come
// from one snapshot: two reads could see the session before another process's decision
// and the plan after it, a state that never existed. With inbound set, the same snapshot
// first answers SeenInbound (a recorded event is an error wrapping core.ErrDuplicate).
// On PostgreSQL it is a read-only REPEATABLE READ transaction in one round trip; on
// SQLite a deferred read transaction, whose WAL snapshot is taken at the first SELECT
// (one look at the WAL index, cheaper than a separate check).
func (s *Store) SessionPlan(ctx context.Context, id string, inbound *core.InboundKey) (core.Session, *core.Plan, error) {
	if s.pool == nil {
		return s.sessionPlanSQLite(ctx, id, inbound)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: getting a connection: %w", id, err)
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	if inbound != nil {
		b.Queue(postgresDialect.q(seenInboundQuery), inbound.Channel, inbound.Account, inbound.EventID)
	}
	b.Queue(postgresDialect.q(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`), id)
	b.Queue(postgresDialect.q(`SELECT `+planCols+` FROM plans WHERE id = (SELECT plan_id FROM sessions WHERE id = ?)`), id)
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	se, p, err := readSessionPlan(br, id, inbound)
	cerr := br.Close()
	if err == nil && cerr != nil {
		err = fmt.Errorf("loading session %q: %w", id, cerr)
	}
	if err != nil {
		if (errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrDuplicate)) && cerr == nil {
			return core.Session{}, nil, err // the batch's COMMIT ended the read
		}
		if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			c.Conn().Close(context.WithoutCancel(ctx))
		}
		return core.Session{}, nil, err
	}
	return se, p, nil
}

func readSessionPlan(br pgx.BatchResults, id string, inbound *core.InboundKey) (core.Session, *core.Plan, error) {
	if _, err := br.Exec(); err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: beginning: %w", id, err)
	}
	if inbound != nil {
		if err := checkInbound(br.QueryRow(), *inbound); err != nil {
			return core.Session{}, nil, err
		}
	}
	se, err := scanSession(br.QueryRow())
	if err != nil {
		return core.Session{}, nil, loadErr(fmt.Sprintf("loading session %q", id), err)
	}
	var plan *core.Plan
	p, err := scanPlan(br.QueryRow())
	switch {
	case err == nil:
		plan = &p
	case !errors.Is(err, sql.ErrNoRows):
		return core.Session{}, nil, fmt.Errorf("loading the plan of session %q: %w", id, err)
	}
	if _, err := br.Exec(); err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: ending the read: %w", id, err)
	}
	return se, plan, nil
}

// betweenSessionPlanReads runs between the reads of sessionPlanSQLite: a test commits
// another process's change there to show the later reads still come from the first one's
// snapshot.
var betweenSessionPlanReads = func() {}

// sessionPlanSQLite reads the inbound key, the session and its plan in one read
// transaction. Like runGroup it is statements on one connection, run without ctx (checked
// once before): a Tx, or a query under a context that can end, starts a goroutine to
// watch it, a scheduler wake-up per read of a few microseconds.
func (s *Store) sessionPlanSQLite(ctx context.Context, id string, inbound *core.InboundKey) (core.Session, *core.Plan, error) {
	tx, err := s.r.Conn(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: getting a connection: %w", id, err)
	}
	defer tx.Close()
	ctx = context.WithoutCancel(ctx)
	if _, err := tx.ExecContext(ctx, "BEGIN"); err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: beginning the read: %w", id, err)
	}
	defer rollback(ctx, tx) // it only read: ending it releases the snapshot
	if inbound != nil {
		k := *inbound
		if err := checkInbound(tx.QueryRowContext(ctx, seenInboundQuery, k.Channel, k.Account, k.EventID), k); err != nil {
			return core.Session{}, nil, err
		}
		betweenSessionPlanReads()
	}
	se, err := scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if err != nil {
		return core.Session{}, nil, loadErr(fmt.Sprintf("loading session %q", id), err)
	}
	if se.PlanID == "" {
		return se, nil, nil
	}
	betweenSessionPlanReads()
	p, err := scanPlan(tx.QueryRowContext(ctx, `SELECT `+planCols+` FROM plans WHERE id = ?`, se.PlanID))
	if errors.Is(err, sql.ErrNoRows) {
		return se, nil, nil
	}
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading plan %q of session %q: %w", se.PlanID, id, err)
	}
	return se, &p, nil
}
