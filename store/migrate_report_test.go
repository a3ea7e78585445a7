package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMigrateReports(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	latest := ms[len(ms)-1].version

	// A new file gets every migration.
	res, err := Migrate(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != path || res.From != 0 || res.To != latest || len(res.Applied) != len(ms) || res.Applied[0] != "0001_"+ms[0].name {
		t.Fatalf("new file: %+v", res)
	}

	// Run again on the closed file (its -wal and -shm are gone): nothing to do.
	if _, err := os.Stat(path + "-shm"); !os.IsNotExist(err) {
		t.Fatalf("the -shm file is still there after Close (%v)", err)
	}
	res, err = Migrate(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if want := (MigrateResult{Path: path, From: latest, To: latest}); !reflect.DeepEqual(res, want) {
		t.Fatalf("up to date: %+v, want %+v", res, want)
	}

	// A file at version 1 (as an older plangate left it) gets the rest.
	old := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", writerDSN(old))
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(ctx, sqlDB{DB: db, d: sqliteDialect}, sqliteDialect, ms[:1], func() time.Time { return at(1) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	res, err = Migrate(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if res.From != 1 || res.To != latest || len(res.Applied) != len(ms)-1 || (len(ms) > 1 && !strings.HasPrefix(res.Applied[0], "0002_")) {
		t.Fatalf("from version 1: %+v", res)
	}

	// A file that is not a database is left alone.
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte("not a database at all, just text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, junk); err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("junk file: %v", err)
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a database at all, just text\n" {
		t.Fatal("Migrate changed a file that is not a database")
	}
}
