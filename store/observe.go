package store

import (
	"context"
	"fmt"
	"time"
)

// OnCommit sets fn to be told how long each Commit took (queueing for the writer
// included: that is what a caller waits for) and whether it asked for durability (not
// Lazy). It is for /metrics; call it before the store is shared, nil turns it off.
func (s *Store) OnCommit(fn func(durable bool, d time.Duration)) { s.onCommit = fn }

// PendingPlans counts the plan versions waiting for a decision. It runs after proposals
// and decisions only (never per message), so a scan of the plans table is affordable.
func (s *Store) PendingPlans(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM plans WHERE status = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting pending plans: %w", err)
	}
	return n, nil
}
