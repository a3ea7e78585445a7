// Package store is plangate's persistence: sessions, plans, the audit log, transcripts,
// nudge schedules, inbound de-duplication and channel state, with embedded, versioned
// migrations. One *Store type has two drivers (see OpenDriver):
//
//   - sqlite (the default): one SQLite file (github.com/mattn/go-sqlite3). Every write
//     goes through one writer connection in an IMMEDIATE transaction, so writers queue
//     instead of failing with "database is locked"; reads use a read-only pool and, with
//     WAL, never wait for a writer.
//   - postgres: a PostgreSQL database (pgx through pgxpool) that several plangate
//     processes may share; see postgres.go for its isolation and locking.
//
// The drivers are dialects of one implementation: every statement is written once
// (dialect.go renumbers placeholders), so a transition is the same transaction with the
// same compare-and-set, de-duplication key and firing ledger on both, and store/storetest
// holds both to one contract. Times are stored in UTC as fixed-width text (TimeLayout)
// and round-trip to the nanosecond. Check and Backup are SQLite only (PostgreSQL has
// pg_amcheck and pg_dump).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
)

// TimeLayout is how every time column is written: UTC with a fixed number of fraction
// digits, so text order is time order and values round-trip exactly.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// readConns is the size of the read pool; reads are short, a few connections suffice.
const readConns = 4

var _ core.Store = (*Store)(nil)

// Store implements core.Store on SQLite or PostgreSQL. It is safe for concurrent use.
type Store struct {
	path string // the file (SQLite) or the DSN without its password (PostgreSQL)
	w    sqlDB  // SQLite: the only connection that writes; PostgreSQL: the pool
	r    sqlDB  // SQLite: the read-only pool; PostgreSQL: the same pool as w
	now  func() time.Time
	pool *pgxpool.Pool // PostgreSQL: the pool under w, used natively for Commit; nil for SQLite
	gc   *groupCommit  // the writer's queue: concurrent commits share a transaction
	ws   *walSync      // SQLite: the fsyncs that make commits durable; nil for PostgreSQL
	// stateMu keeps SetChannelStateWith's saves one at a time on PostgreSQL.
	stateMu *sync.Mutex
	// onCommit, when set, is told each Commit's duration (see OnCommit).
	onCommit func(durable bool, d time.Duration)
}

// Open opens (creating if needed) the database at path and applies pending migrations.
// The directory of path must exist.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("opening store: no path given")
	}
	s, err := open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving path: %w", err)
	}
	if err := checkPath(abs); err != nil {
		return nil, err
	}
	if err := setPageSize(ctx, abs); err != nil {
		return nil, explain(err)
	}

	wdb, err := sql.Open("sqlite3", writerDSN(abs))
	if err != nil {
		return nil, err
	}
	s := &Store{path: abs, w: sqlDB{DB: wdb, d: sqliteDialect}, now: time.Now, gc: &groupCommit{}}
	closeAll := []func() error{s.w.Close} // on failure, in reverse order
	defer func() {
		for i := len(closeAll) - 1; i >= 0; i-- {
			closeAll[i]()
		}
	}()
	// One writer connection, kept open: writes are serialized here rather than by
	// SQLite's busy handler, and the connection never expires mid-run.
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	if err := s.w.PingContext(ctx); err != nil {
		return nil, explain(err)
	}
	if err := migrate(ctx, s.w, time.Now); err != nil {
		return nil, explain(err)
	}
	// SQLite quietly opens a read-only file (or a WAL database whose directory is
	// read-only) for reading only; find out now rather than at the first decision.
	if err := probeWrite(ctx, s.w); err != nil {
		return nil, explain(err)
	}

	// The -wal file exists now (the writer created it), and stays while w is open.
	if s.ws, err = openWALSync(abs); err != nil {
		return nil, err
	}
	closeAll = append(closeAll, s.ws.close)
	// The migrations committed at NORMAL: made durable before anything reads them.
	if err := s.ws.wait(s.ws.ticket()); err != nil {
		return nil, err
	}

	// The read pool is opened after the writer has switched the file to WAL and created
	// its -wal and -shm files, which a read-only connection cannot create itself.
	rdb, err := sql.Open("sqlite3", readerDSN(abs))
	if err != nil {
		return nil, err
	}
	s.r = sqlDB{DB: rdb, d: sqliteDialect}
	closeAll = append(closeAll, s.r.Close)
	s.r.SetMaxOpenConns(readConns)
	s.r.SetMaxIdleConns(readConns)
	if err := s.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("opening read pool: %w", explain(err))
	}
	closeAll = nil
	return s, nil
}

// Close closes the read pool, the writer and the WAL sync file, so the last connection to
// close is the one allowed to checkpoint the WAL.
func (s *Store) Close() error {
	var err error
	if s.pool != nil {
		err = s.w.Close()
		s.pool.Close()
	} else {
		err = errors.Join(s.r.Close(), s.w.Close(), s.ws.close())
	}
	if err != nil {
		return fmt.Errorf("closing store %s: %w", s.path, err)
	}
	return nil
}

// PageSize is the page size of a database file plangate creates. SQLite's WAL writes
// every page a transaction changes in full, and a message's transactions change a few
// small rows each: 1024 wrote 26.6 KB per message against 61.6 KB at the default 4096,
// at no measurable CPU cost. 512 spills real rows (a Telegram update in the inbox record,
// a long answer, a lease owner with a long host name) to overflow pages and wrote more
// pages (BenchmarkMessagePages, docs/decisions.md). In WAL mode an existing file keeps
// the page size it was created with.
const PageSize = 1024

// setPageSize gives a new (missing or empty) database file its page size, which SQLite
// takes only before the file's first write: the driver has no DSN key for it, and the
// writer's DSN switches to WAL at connect, which is such a write. So a connection of its
// own sets the page size and makes that first write. Of two processes creating the file
// at once, whichever writes first sets the page size; a file with content keeps its own.
//
// Switching a new file to WAL takes an exclusive lock from a shared one; of two
// connections asking at once, SQLite answers one SQLITE_BUSY at once, without its busy
// handler (waiting could deadlock). The loser tries again after a pause, when the file
// is usually in WAL already and needs no such lock.
func setPageSize(ctx context.Context, abs string) error {
	const tries = 50
	for i := 1; ; i++ {
		err := createFile(ctx, abs)
		if err == nil || i == tries || !isCode(err, sqlite3.ErrBusy, sqlite3.ErrLocked) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("creating the database file: %w", ctx.Err())
		case <-time.After(time.Duration(i) * 5 * time.Millisecond):
		}
	}
}

// isCode reports whether err is a SQLite error with one of codes.
func isCode(err error, codes ...sqlite3.ErrNo) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && slices.Contains(codes, se.Code)
}

// createFile is one attempt of setPageSize.
func createFile(ctx context.Context, abs string) error {
	if fi, err := os.Stat(abs); err == nil && fi.Size() > 0 {
		return nil
	}
	db, err := sql.Open("sqlite3", fileURI(abs)+"?_busy_timeout=5000")
	if err != nil {
		return fmt.Errorf("creating the database file: %w", err)
	}
	defer db.Close()
	// One Exec: both statements run on the same connection, where page_size is kept.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d; PRAGMA journal_mode = WAL", PageSize)); err != nil {
		return fmt.Errorf("creating the database file: %w", err)
	}
	return nil
}

// probeWrite rewrites one row in place and rolls back: neither opening nor BEGIN
// IMMEDIATE fails on a database that cannot be written, only a write does.
func probeWrite(ctx context.Context, w sqlDB) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // the probe must change nothing
	_, err = tx.ExecContext(ctx, `UPDATE schema_migrations SET name = name
		WHERE version = (SELECT MAX(version) FROM schema_migrations)`)
	return err
}

// checkPath turns the common mistakes into clear errors before SQLite reports them as
// "unable to open database file".
func checkPath(abs string) error {
	fi, err := os.Stat(abs)
	switch {
	case err == nil && fi.IsDir():
		return errors.New("path is a directory, not a database file")
	case err == nil:
		return nil
	}
	dir := filepath.Dir(abs)
	di, dirErr := os.Stat(dir)
	switch {
	case errors.Is(dirErr, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case dirErr != nil:
		return fmt.Errorf("checking directory: %w", dirErr)
	case !di.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checking path: %w", err)
	}
	return nil
}

// explain rewrites SQLite's terse open errors into something a user can act on.
func explain(err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrNotADB:
		return errors.New("file is not a SQLite database")
	case sqlite3.ErrCantOpen:
		return fmt.Errorf("cannot open or create the database file (is the directory writable?): %w", err)
	case sqlite3.ErrReadonly, sqlite3.ErrPerm:
		return fmt.Errorf("database is not writable: %w", err)
	case sqlite3.ErrCorrupt:
		return fmt.Errorf("database file is corrupt: %w", err)
	}
	return err
}

// fileURI builds a SQLite URI for an absolute path; the path is escaped so that '?', '#'
// and '%' in file names are not taken for URI syntax.
func fileURI(abs string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath()
}

// stmtCache is how many prepared statements each connection keeps, per SQL text: the
// writer's statements number a few dozen, and preparing them again on every commit was
// an eighth of the CPU of a message's round trip.
const stmtCache = "&_stmt_cache_size=64"

// writerDSN: synchronous=NORMAL, since durability comes from the fsyncs of walsync.go,
// not from the COMMIT (a checkpoint and a WAL restart still sync themselves at NORMAL).
func writerDSN(abs string) string {
	return fileURI(abs) + "?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL" + stmtCache
}

// readerDSN opens read-only at the SQLite level (mode=ro) and refuses writes at the
// connection level too (_query_only), so a read can never write to the database.
func readerDSN(abs string) string {
	return fileURI(abs) + "?mode=ro&_query_only=1&_busy_timeout=5000&_foreign_keys=on" + stmtCache
}

// formatTime renders t for storage.
func formatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// parseTime reads a stored time; what names the column and row for the error.
func parseTime(v, what string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing %s %q: %w", what, v, err)
	}
	return t.UTC(), nil
}

// stamp returns t in UTC, or now when t is zero.
func stamp(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t.UTC()
}
