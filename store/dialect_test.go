package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plangate/plangate/core"
)

// Every schema change exists for both engines under the same number and name, so a
// database of either driver at version N has the same tables.
func TestMigrationsMatchAcrossDialects(t *testing.T) {
	lite, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(pgMigrationFiles, "migrations/postgres")
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) != len(pg) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].version != pg[i].version || lite[i].name != pg[i].name {
			t.Errorf("migration %d: SQLite %04d_%s, PostgreSQL %04d_%s", i, lite[i].version, lite[i].name, pg[i].version, pg[i].name)
		}
	}
}

func TestDialectPlaceholders(t *testing.T) {
	q := `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`
	if got := sqliteDialect.q(q); got != q {
		t.Errorf("sqlite: %q", got)
	}
	for range 2 { // the second answer comes from the cache
		if got, want := postgresDialect.q(q), `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`; got != want {
			t.Errorf("postgres: %q, want %q", got, want)
		}
	}
}

func TestDeadlockIsAConflict(t *testing.T) {
	for code, want := range map[string]bool{"40P01": true, "40001": true, "23505": false} {
		err := asConflict(fmt.Errorf("committing: %w", &pgconn.PgError{Code: code}))
		if errors.Is(err, core.ErrConflict) != want {
			t.Errorf("SQLSTATE %s: %v, want conflict %v", code, err, want)
		}
	}
	if asConflict(nil) != nil {
		t.Error("asConflict(nil) is not nil")
	}
}
