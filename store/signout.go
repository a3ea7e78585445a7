package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SignOut records that the web sign-in with this nonce was signed out; its cookie is
// refused (SignedOut) by every process on the database until until, when it would have
// expired anyway. Durable before it returns: a restart must not bring the cookie back.
func (s *Store) SignOut(ctx context.Context, nonce string, until time.Time) error {
	if nonce == "" {
		return errors.New("recording a sign-out: empty nonce")
	}
	err := s.runSteps(ctx, []step{{what: "recording the sign-out",
		q: `INSERT INTO sign_outs (nonce, until) VALUES (?, ?)
		ON CONFLICT (nonce) DO UPDATE SET until = excluded.until`,
		args: []any{nonce, formatTime(until)}}}, false)
	if err != nil {
		return fmt.Errorf("recording a sign-out: %w", explain(err))
	}
	return nil
}

// SignedOut reports whether the web sign-in with this nonce was signed out.
func (s *Store) SignedOut(ctx context.Context, nonce string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM sign_outs WHERE nonce = ?`, nonce).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading sign-outs: %w", err)
	}
	return true, nil
}

// PruneSignOuts forgets the sign-outs of cookies that expired before now (they are
// refused for their age alone) and returns how many it removed.
func (s *Store) PruneSignOuts(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.execWriter(ctx, `DELETE FROM sign_outs WHERE until < ?`, formatTime(now))
	if err != nil {
		return 0, fmt.Errorf("pruning sign-outs: %w", err)
	}
	return res.RowsAffected() // both drivers count without an error
}
