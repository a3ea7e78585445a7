package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// ErrDamaged is returned by Check when SQLite finds problems in the file.
var ErrDamaged = errors.New("database file is damaged")

// maxProblems bounds what an integrity check reports: a badly damaged file yields one line
// per broken page, and the first ones say enough.
const maxProblems = 100

// CheckResult is what an integrity check found.
type CheckResult struct {
	Path     string
	Full     bool     // integrity_check rather than quick_check
	Problems []string // empty when the file is sound
}

// Check runs PRAGMA quick_check (with full, integrity_check, which also verifies indexes
// against their tables) on the database at path without migrating or writing it. A
// damaged file is reported with its problems and an error wrapping ErrDamaged; a file
// that is missing or cannot be opened is an error.
func Check(ctx context.Context, path string, full bool) (CheckResult, error) {
	res := CheckResult{Full: full}
	abs, err := filepath.Abs(path)
	if err != nil {
		return res, fmt.Errorf("checking store %s: resolving path: %w", path, err)
	}
	res.Path = abs
	if fi, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("checking store %s: no database file there", abs)
	} else if err != nil {
		return res, fmt.Errorf("checking store %s: %w", abs, err)
	} else if fi.IsDir() {
		return res, fmt.Errorf("checking store %s: path is a directory, not a database file", abs)
	}
	db, err := sql.Open("sqlite3", checkDSN(abs))
	if err != nil {
		return res, fmt.Errorf("checking store %s: %w", abs, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	problems, err := integrity(ctx, db, full)
	res.Problems = problems
	if err != nil {
		if isCode(err, sqlite3.ErrCorrupt, sqlite3.ErrNotADB) { // damage SQLite noticed while reading
			res.Problems = append(res.Problems, explain(err).Error())
			return res, fmt.Errorf("checking store %s: %w", abs, ErrDamaged)
		}
		return res, fmt.Errorf("checking store %s: %w", abs, explain(err))
	}
	if len(problems) > 0 {
		return res, fmt.Errorf("checking store %s: %w (%d problems)", abs, ErrDamaged, len(problems))
	}
	return res, nil
}

// checkDSN opens an existing file (mode=rw never creates one) read-write, so that a WAL
// left by a crash is recovered into the connection's view, and refuses writes.
func checkDSN(abs string) string {
	return fileURI(abs) + "?mode=rw&_query_only=1&_busy_timeout=5000"
}

// integrity runs the check pragma and returns its lines other than "ok".
func integrity(ctx context.Context, db *sql.DB, full bool) ([]string, error) {
	pragma := fmt.Sprintf("PRAGMA quick_check(%d)", maxProblems)
	if full {
		pragma = fmt.Sprintf("PRAGMA integrity_check(%d)", maxProblems)
	}
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return problems, err
		}
		for _, l := range strings.Split(line, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "ok" {
				problems = append(problems, l)
			}
		}
	}
	return problems, rows.Err()
}

// RecoveryHint is what an operator runs to salvage a damaged database, for messages that
// refuse to start on one.
func RecoveryHint(path string) string {
	return fmt.Sprintf("stop plangate, keep a copy of the file, then salvage what is readable with\n"+
		"  sqlite3 %s .recover | sqlite3 %s.recovered\n"+
		"and point store.path at %s.recovered (or restore a backup made with plangate store backup)",
		shellQuote(path), shellQuote(path), path)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
