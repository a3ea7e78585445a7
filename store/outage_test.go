package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// IsOutage on the errors the drivers really return: a full SQLite file, a locked one, a
// PostgreSQL server shutting down and one that is gone are outages; a constraint, a SQL
// error, a conflict and a missing row are answers.
func TestIsOutageOnDriverErrors(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db")+"?_busy_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`, `INSERT INTO t VALUES (1, x'00')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, constraint := db.Exec(`INSERT INTO t VALUES (1, x'01')`)
	if _, err := db.Exec(`PRAGMA max_page_count = 2`); err != nil {
		t.Fatal(err)
	}
	_, full := db.Exec(`INSERT INTO t VALUES (2, zeroblob(100000))`)

	srv := pgtest.Own(t)
	s, err := store.OpenDriver(ctx, store.DriverPostgres, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Sessions(ctx); err != nil { // the store answers
		t.Fatal(err)
	}
	pg, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	_, syntax := pg.ExecContext(ctx, `SELEC 1`)
	conn, err := pg.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	_, shutdown := conn.ExecContext(ctx, `SELECT 1`) // the server closed it
	conn.Close()
	_, gone := s.Sessions(ctx)
	se := core.Session{ID: "s1", Phase: core.PhasePlanning}
	_, commitGone := s.Commit(ctx, core.Change{Session: &se})

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_FULL", full, true},
		{"SQLITE_FULL wrapped", fmt.Errorf("committing transaction: %w", full), true},
		{"SQLITE_CONSTRAINT", constraint, false},
		{"PostgreSQL gone, a read", gone, true},
		{"PostgreSQL gone, a commit", commitGone, true},
		{"PostgreSQL shut down under an open connection", shutdown, true},
		{"a SQL error", syntax, false},
		{"a conflict", fmt.Errorf("committing: %w", core.ErrConflict), false},
		{"not found", core.ErrNotFound, false},
		{"another error", errors.New("decoding the plan: bad JSON"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the driver returned no error")
			}
			if got := store.IsOutage(tc.err); got != tc.want {
				t.Errorf("IsOutage(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	var sqe sqlite3.Error
	if !errors.As(full, &sqe) || sqe.Code != sqlite3.ErrFull {
		t.Errorf("the full file gave %v, not SQLITE_FULL", full)
	}
}
