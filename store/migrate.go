package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// The PostgreSQL schema is the same tables, columns and constraints written in
// PostgreSQL's types; its migrations are numbered like the SQLite ones, one for one.
//
//go:embed migrations/postgres/*.sql
var pgMigrationFiles embed.FS

// migrator is what applying migrations needs: a sqlDB (SQLite's single writer) or a
// pinned *sql.Conn (PostgreSQL, holding the migration lock).
type migrator interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// migration is one embedded schema change, named NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the migrations from fsys (a directory of NNNN_name.sql files) in
// version order, and rejects gaps and duplicates so a bad file name cannot silently skip
// a schema change.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || name == "" {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected version %d (versions must be 1, 2, 3, ...)", m.version, m.name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations found")
	}
	return ms, nil
}

// migrate applies the embedded migrations of w's dialect that the database has not
// recorded yet.
func migrate(ctx context.Context, w sqlDB, now func() time.Time) error {
	if !w.d.pg {
		ms, err := loadMigrations(migrationFiles, "migrations")
		if err != nil {
			return err
		}
		return apply(ctx, w, w.d, ms, now)
	}
	return migratePostgres(ctx, w, now)
}

// pgMigrationLock is the advisory lock key that serializes migrations of replicas
// starting at the same moment ("plangate" in ASCII).
const pgMigrationLock = 0x706c616e67617465

// migratePostgres applies the migrations holding a session-level advisory lock on one
// pinned connection: replicas starting together would otherwise race on CREATE TABLE IF
// NOT EXISTS (not safe against a concurrent create) and on the version check.
func migratePostgres(ctx context.Context, w sqlDB, now func() time.Time) error {
	ms, err := loadMigrations(pgMigrationFiles, "migrations/postgres")
	if err != nil {
		return err
	}
	c, err := w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("getting a connection for migrations: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(pgMigrationLock)); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	// Unlocked on a fresh context: a cancelled ctx must not leave the lock held on a
	// connection that goes back to the pool.
	defer c.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(pgMigrationLock))
	return apply(ctx, c, postgresDialect, ms, now)
}

// apply runs each pending migration in its own transaction together with its
// schema_migrations row, so a failed migration leaves no trace and is retried next time.
// d is db's dialect, for the statements of the transactions.
func apply(ctx context.Context, db migrator, d dialect, ms []migration, now func() time.Time) error {
	const bootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL
	)`
	if _, err := db.ExecContext(ctx, bootstrap); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	latest := ms[len(ms)-1].version
	if current > latest {
		return fmt.Errorf("database schema version %d is newer than this plangate knows (%d): use a newer plangate", current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if err := applyOne(ctx, db, d, m, now); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, db migrator, d dialect, m migration, now func() time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("applying migration %04d_%s: %w", m.version, m.name, err)
	}
	defer tx.Rollback() // a no-op after Commit
	// Another process may have applied it since we looked; SQLite's IMMEDIATE transaction
	// holds the write lock (PostgreSQL's caller the migration lock), so this check is
	// race-free.
	var n int
	if err := tx.QueryRowContext(ctx, d.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.version).Scan(&n); err != nil {
		return fmt.Errorf("applying migration %04d_%s: %w", m.version, m.name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, d.q(m.sql)); err != nil {
		return fmt.Errorf("applying migration %04d_%s: %w", m.version, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.version, m.name, formatTime(now())); err != nil {
		return fmt.Errorf("recording migration %04d_%s: %w", m.version, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing migration %04d_%s: %w", m.version, m.name, err)
	}
	return nil
}
