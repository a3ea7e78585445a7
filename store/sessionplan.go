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
// or an error wrapping core.ErrNotFound: what a person's message reads first. On
// PostgreSQL both come from one snapshot (a read-only REPEATABLE READ transaction) in one
// round trip; on SQLite they are two reads of the read pool, which cost no round trip.
func (s *Store) SessionPlan(ctx context.Context, id string) (core.Session, *core.Plan, error) {
	if s.pool == nil {
		se, err := s.Session(ctx, id)
		if err != nil || se.PlanID == "" {
			return se, nil, err
		}
		p, err := s.Plan(ctx, se.PlanID)
		if errors.Is(err, core.ErrNotFound) {
			return se, nil, nil
		}
		if err != nil {
			return core.Session{}, nil, err
		}
		return se, &p, nil
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: getting a connection: %w", id, err)
	}
	defer c.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue(postgresDialect.q(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`), id)
	b.Queue(postgresDialect.q(`SELECT `+planCols+` FROM plans WHERE id = (SELECT plan_id FROM sessions WHERE id = ?)`), id)
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	se, p, err := readSessionPlan(br, id)
	cerr := br.Close()
	if err == nil && cerr != nil {
		err = fmt.Errorf("loading session %q: %w", id, cerr)
	}
	if err != nil {
		if errors.Is(err, core.ErrNotFound) && cerr == nil {
			return core.Session{}, nil, err // the batch's COMMIT ended the read
		}
		if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			c.Conn().Close(context.WithoutCancel(ctx))
		}
		return core.Session{}, nil, err
	}
	return se, p, nil
}

func readSessionPlan(br pgx.BatchResults, id string) (core.Session, *core.Plan, error) {
	if _, err := br.Exec(); err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: beginning: %w", id, err)
	}
	se, err := scanSession(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return core.Session{}, nil, fmt.Errorf("loading session %q: %w", id, core.ErrNotFound)
	}
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: %w", id, err)
	}
	var plan *core.Plan
	p, err := scanPlan(br.QueryRow())
	switch {
	case err == nil:
		plan = &p
	case !errors.Is(err, pgx.ErrNoRows):
		return core.Session{}, nil, fmt.Errorf("loading the plan of session %q: %w", id, err)
	}
	if _, err := br.Exec(); err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %q: ending the read: %w", id, err)
	}
	return se, plan, nil
}
