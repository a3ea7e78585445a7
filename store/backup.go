package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3"
)

// backupPages is how many pages one backup step copies: between steps the source is not
// locked, so a running gateway keeps writing while a large file is copied.
const backupPages = 1024

// BackupResult describes a finished backup.
type BackupResult struct {
	Path          string // the new file
	Pages         int    // pages copied
	SchemaVersion int    // the migration the copy is at, equal to the source's
}

// Backup copies the database at src into the new file dest with SQLite's online backup
// API, which takes a consistent snapshot while other processes keep using src. dest must
// not exist. The copy is checked (integrity_check, and the schema version compared with
// the source's) before Backup reports success; a failed or unsound copy is removed.
func Backup(ctx context.Context, src, dest string) (BackupResult, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return BackupResult{}, fmt.Errorf("backing up store %s: resolving path: %w", src, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return BackupResult{}, fmt.Errorf("backing up store %s: %w", abs, err)
	}
	db, err := sql.Open("sqlite3", checkDSN(abs))
	if err != nil {
		return BackupResult{}, fmt.Errorf("backing up store %s: %w", abs, err)
	}
	defer db.Close()
	res, err := backupFrom(ctx, db, dest)
	if err != nil {
		return res, fmt.Errorf("backing up store %s: %w", abs, err)
	}
	return res, nil
}

func backupFrom(ctx context.Context, src *sql.DB, dest string) (res BackupResult, err error) {
	abs, err := filepath.Abs(dest)
	if err != nil {
		return res, fmt.Errorf("resolving backup path: %w", err)
	}
	res.Path = abs
	// O_EXCL reserves the name: an existing file, even one created a moment ago by
	// someone else, is never overwritten. SQLite takes an empty file for a new database.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return res, fmt.Errorf("%s already exists; refusing to overwrite it", abs)
	}
	if err != nil {
		return res, fmt.Errorf("creating backup file: %w", err)
	}
	f.Close()
	defer func() {
		if err != nil {
			for _, p := range []string{abs, abs + "-journal", abs + "-wal", abs + "-shm"} {
				os.Remove(p)
			}
		}
	}()
	if res.Pages, err = copyPages(ctx, src, abs); err != nil {
		return res, err
	}
	if res.SchemaVersion, err = verifyCopy(ctx, src, abs); err != nil {
		return res, err
	}
	return res, nil
}

// copyPages runs the backup from src into the (empty) file at dest.
func copyPages(ctx context.Context, src *sql.DB, dest string) (int, error) {
	dst, err := sql.Open("sqlite3", fileURI(dest)+"?mode=rw")
	if err != nil {
		return 0, fmt.Errorf("opening backup file: %w", err)
	}
	defer dst.Close()
	dconn, err := dst.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("opening backup file: %w", explain(err))
	}
	defer dconn.Close()
	sconn, err := src.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("opening the database: %w", explain(err))
	}
	defer sconn.Close()
	var pages int
	err = dconn.Raw(func(d any) error {
		return sconn.Raw(func(s any) error {
			dc, ok1 := d.(*sqlite3.SQLiteConn)
			sc, ok2 := s.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return errors.New("the driver connection is not a go-sqlite3 one")
			}
			var err error
			pages, err = stepBackup(ctx, dc, sc)
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("copying pages: %w", explain(err))
	}
	return pages, nil
}

// stepBackup copies backupPages at a time until done, pausing briefly when the source
// is busy.
func stepBackup(ctx context.Context, dc, sc *sqlite3.SQLiteConn) (int, error) {
	b, err := dc.Backup("main", sc, "main")
	if err != nil {
		return 0, err
	}
	for {
		if err := ctx.Err(); err != nil {
			b.Close()
			return 0, err
		}
		before := b.Remaining()
		done, err := b.Step(backupPages)
		if err != nil {
			b.Close()
			return 0, err
		}
		if done {
			pages := b.PageCount()
			return pages, b.Finish()
		}
		if b.Remaining() == before {
			time.Sleep(10 * time.Millisecond) // the source is locked for a moment
		}
	}
}

// verifyCopy checks the finished copy and returns its schema version.
func verifyCopy(ctx context.Context, src *sql.DB, dest string) (int, error) {
	res, err := Check(ctx, dest, true)
	if err != nil {
		if errors.Is(err, ErrDamaged) {
			return 0, fmt.Errorf("the copy failed its integrity check: %v", res.Problems)
		}
		return 0, fmt.Errorf("checking the copy: %w", err)
	}
	want, err := schemaVersion(ctx, src)
	if err != nil {
		return 0, fmt.Errorf("reading the source's schema version: %w", err)
	}
	db, err := sql.Open("sqlite3", checkDSN(dest))
	if err != nil {
		return 0, fmt.Errorf("opening the copy: %w", err)
	}
	defer db.Close()
	got, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("reading the copy's schema version: %w", err)
	}
	if got != want {
		return 0, fmt.Errorf("the copy is at schema version %d, the source at %d", got, want)
	}
	return got, nil
}

func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, explain(err)
	}
	return int(v.Int64), nil
}
