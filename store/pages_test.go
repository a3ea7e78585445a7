package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// Migration 0010 takes a database at version 9 with channel state and inbound keys in
// it: the rows are kept, channel_state is a rowid table (a value updates in its row's
// own page), inbound_at is gone, and saving, moving, pruning and de-duplication work.
func TestMigration0010(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	w := migratedTo(t, path, 9)
	if _, err := w.ExecContext(ctx, `INSERT INTO channel_state (channel, account, key, value, updated_at) VALUES
		('telegram', 'bot', 'updates', ?, ?), ('slack', 'T1', 'inbox', 'small', ?);
		INSERT INTO inbound (channel, account, event_id, at) VALUES ('telegram', 'bot', '1', ?), ('telegram', 'bot', '2', ?)`,
		strings.Repeat("u", 700), formatTime(at(1)), formatTime(at(1)), formatTime(at(1)), formatTime(at(5))); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var schema string
	if err := s.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'channel_state'`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(schema), "WITHOUT ROWID") || !strings.Contains(schema, "PRIMARY KEY (channel, account, key)") {
		t.Errorf("channel_state after 0010:\n%s", schema)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name = 'inbound_at'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("inbound_at: %d, %v; want it dropped", n, err)
	}
	if v, ok, err := s.ChannelState(ctx, "telegram", "bot", "updates"); err != nil || !ok || v != strings.Repeat("u", 700) {
		t.Fatalf("kept value: %d bytes, %v, %v", len(v), ok, err)
	}
	if err := s.SetChannelState(ctx, "telegram", "bot", "updates", "next"); err != nil {
		t.Fatal(err)
	}
	if moved, err := s.MoveChannelState(ctx, "slack", "T1", "inbox", "inbox.old"); err != nil || !moved {
		t.Fatalf("move: %v, %v", moved, err)
	}
	keys, err := s.ChannelStateKeys(ctx, "slack", "inbox")
	if err != nil || len(keys) != 1 || keys[0].Key != "inbox.old" {
		t.Fatalf("keys after the move: %v, %v", keys, err)
	}
	if v, _, err := s.ChannelState(ctx, "telegram", "bot", "updates"); err != nil || v != "next" {
		t.Fatalf("saved value %q, %v", v, err)
	}
	if pruned, err := s.PruneInbound(ctx, at(3)); err != nil || pruned != 1 {
		t.Fatalf("PruneInbound = %d, %v; want the key from before at(3)", pruned, err)
	}
	if seen, err := s.SeenInbound(ctx, core.InboundKey{Channel: "telegram", Account: "bot", EventID: "2"}); err != nil || !seen {
		t.Fatalf("the newer key: seen %v, %v", seen, err)
	}
}

// migratedTo opens a new SQLite file at path with the first n migrations applied (the
// schema an older release left), for a test of migration n+1; the caller closes it.
func migratedTo(t *testing.T, path string, n int) sqlDB {
	t.Helper()
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	if ms[n].version != n+1 {
		t.Fatalf("migration %d is %04d_%s", n+1, ms[n].version, ms[n].name)
	}
	db, err := sql.Open("sqlite3", writerDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	w := sqlDB{DB: db, d: sqliteDialect}
	if err := apply(context.Background(), w, w.d, ms[:n], func() time.Time { return at(1) }); err != nil {
		t.Fatal(err)
	}
	return w
}
