package store

import (
	"context"
	"fmt"
)

// Ping runs a cheap query on the read pool, for readiness checks: it answers when the
// database file can be read, without queueing behind the writer.
func (s *Store) Ping(ctx context.Context) error {
	var v int
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("querying the store: %w", explain(err))
	}
	if v == 0 {
		return fmt.Errorf("querying the store: no schema version recorded")
	}
	return nil
}
