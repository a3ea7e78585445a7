package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MigrateResult is what Migrate found and did.
type MigrateResult struct {
	Path     string   // the database file, absolute (PostgreSQL: DescribeDSN's phrase)
	From, To int      // schema versions before and after (From is 0 for a new file)
	Applied  []string // the migrations recorded after From, e.g. "0002_leases_tool_runs"
}

// Migrate brings the database at path to the schema of this build and reports what it
// applied, for `plangate store migrate`: the same migrations Open applies at every start,
// run on their own so an upgrade can be done (and its failure seen) before the service
// starts. A missing file is created; a file from a newer plangate is refused.
func Migrate(ctx context.Context, path string) (MigrateResult, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("migrating store %s: %w", path, err)
	}
	res := MigrateResult{Path: abs}
	if res.From, err = fileSchemaVersion(ctx, abs); err != nil {
		return res, fmt.Errorf("migrating store %s: %w", abs, err)
	}
	s, err := Open(ctx, abs)
	if err != nil {
		return res, err
	}
	defer s.Close()
	return s.appliedSince(ctx, res)
}

// appliedSince fills res.To and res.Applied with the migrations recorded after res.From.
func (s *Store) appliedSince(ctx context.Context, res MigrateResult) (MigrateResult, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT version, name FROM schema_migrations WHERE version > ? ORDER BY version`, res.From)
	res.To = res.From
	res.Applied, err = collect(rows, err, nil, func(sc scanner) (string, error) {
		var name string
		if err := sc.Scan(&res.To, &name); err != nil {
			return "", err
		}
		return fmt.Sprintf("%04d_%s", res.To, name), nil
	})
	if err != nil {
		return res, fmt.Errorf("reading applied migrations: %w", err)
	}
	return res, nil
}

// fileSchemaVersion reads the recorded schema version of an existing file without
// changing it; 0 when the file or its schema_migrations table does not exist yet.
func fileSchemaVersion(ctx context.Context, abs string) (int, error) {
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("checking path: %w", err)
	}
	if err := checkPath(abs); err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite3", fileURI(abs)+"?mode=ro&_query_only=1&_busy_timeout=5000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var table int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&table); err != nil {
		return 0, explain(err)
	}
	if table == 0 {
		return 0, nil
	}
	return schemaVersion(ctx, db)
}
