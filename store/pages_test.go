package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
)

// filePageSize reads the page size of the database file at path, on a connection of its own.
func filePageSize(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", fileURI(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A database plangate creates has PageSize pages and is in WAL mode; so has a file that
// exists but is empty (a name reserved with O_EXCL, a touched file).
func TestNewDatabasePageSize(t *testing.T) {
	s, path := openTest(t)
	var mode string
	if err := s.r.QueryRowContext(context.Background(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if got := filePageSize(t, path); got != PageSize {
		t.Errorf("new database: page_size %d, want %d", got, PageSize)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Open(context.Background(), empty)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if got := filePageSize(t, empty); got != PageSize {
		t.Errorf("empty file: page_size %d, want %d", got, PageSize)
	}
}

// Opens racing on a new path (as two processes starting at once) all succeed, and the
// file has PageSize whichever of them created it.
func TestNewDatabasePageSizeRacingOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), path) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer s.Close()
	}
	if got := filePageSize(t, path); got != PageSize {
		t.Errorf("page_size %d, want %d", got, PageSize)
	}
	for i, s := range stores {
		if err := s.SetChannelState(context.Background(), "c", "a", fmt.Sprint(i), "v"); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
}

// A database created with another page size (by an earlier plangate, at SQLite's 4096,
// or by hand) keeps it: it is migrated, written and read as before.
func TestExistingPageSizeKept(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{4096, 512} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plangate.db")
			db, err := sql.Open("sqlite3", fileURI(path))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(fmt.Sprintf(`PRAGMA page_size = %d; PRAGMA journal_mode = WAL; CREATE TABLE before_plangate (x)`, size)); err != nil {
				t.Fatal(err)
			}
			db.Close()
			for round := range 2 {
				s, err := Open(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				if round == 0 {
					if _, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "kept", Phase: core.PhasePlanning},
						Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "still here"}}}); err != nil {
						t.Fatal(err)
					}
				} else if ms, err := s.Transcript(ctx, "kept", 10); err != nil || len(ms) != 1 || ms[0].Content != "still here" {
					t.Fatalf("after reopening: %v, %v", ms, err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if got := filePageSize(t, path); got != size {
					t.Fatalf("round %d: page_size %d, want %d (kept)", round, got, size)
				}
			}
		})
	}
}
