package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errBadDSN is how a DSN that does not parse is reported: pgx's own parse error repeats
// the DSN, password included.
var errBadDSN = errors.New("store.dsn is not a valid PostgreSQL connection string")

// DescribeDSN names the database a DSN points at for messages and `plangate config check`
// ("postgres pg@db.internal:5432/plangate"), never its password. A DSN that does not parse
// is an error that does not repeat it.
func DescribeDSN(dsn string) (string, error) {
	if strings.TrimSpace(dsn) == "" {
		return "", errors.New("store.dsn is empty")
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", errBadDSN
	}
	return fmt.Sprintf("postgres %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database), nil
}

// PostgresStatus is what CheckPostgres found.
type PostgresStatus struct {
	Where         string // DescribeDSN's phrase
	SchemaVersion int    // 0 for a database plangate has not used yet
	Server        string // the server's version, e.g. "16.4"
}

// CheckPostgres connects to the database at dsn and reads its schema version without
// migrating or writing anything, for `plangate store check` (PostgreSQL checks its own
// pages; there is no quick_check to run).
func CheckPostgres(ctx context.Context, dsn string) (PostgresStatus, error) {
	where, err := DescribeDSN(dsn)
	if err != nil {
		return PostgresStatus{}, fmt.Errorf("checking store: %w", err)
	}
	st := PostgresStatus{Where: where}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return st, fmt.Errorf("checking store %s: connecting: %w", where, err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	if st.SchemaVersion, err = pgSchemaVersion(ctx, c); err != nil {
		return st, fmt.Errorf("checking store %s: %w", where, err)
	}
	if err := c.QueryRow(ctx, `SHOW server_version`).Scan(&st.Server); err != nil {
		return st, fmt.Errorf("checking store %s: reading the server version: %w", where, err)
	}
	return st, nil
}

// pgSchemaVersion reads the recorded schema version, 0 when schema_migrations does not
// exist (in the DSN's search_path) yet.
func pgSchemaVersion(ctx context.Context, c *pgx.Conn) (int, error) {
	var exists bool
	if err := c.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("looking for schema_migrations: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := c.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	return v, nil
}

// MigratePostgres brings the database at dsn to this build's schema and reports what it
// applied, like Migrate for a SQLite file. Replicas starting meanwhile wait on the
// migration lock.
func MigratePostgres(ctx context.Context, dsn string) (MigrateResult, error) {
	before, err := CheckPostgres(ctx, dsn)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("migrating: %w", err)
	}
	res := MigrateResult{Path: before.Where, From: before.SchemaVersion}
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		return res, err
	}
	defer s.Close()
	return s.appliedSince(ctx, res)
}
