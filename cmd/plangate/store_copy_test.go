package main

import (
	"database/sql"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plangate/plangate/store"
)

// sqlitePageSize reads the page size of the SQLite file at path.
func sqlitePageSize(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.ToSlash(path)+"?mode=ro")
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

// `plangate store copy` from one SQLite file into a new one is how a database made with
// SQLite's 4 KB pages (by a plangate from before store.PageSize) is converted, as the
// README says: the copy has the new page size and the deployment's rows.
func TestStoreCopySQLiteConvertsPageSize(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	db, err := sql.Open("sqlite3", "file:"+filepath.ToSlash(old))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cfg := writeConfig(t, "store: {path: "+old+"}\nllm: {provider: script, script: \"${SCRIPT}\"}\n")
	if code, _, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	if got := sqlitePageSize(t, old); got != 4096 {
		t.Fatalf("the old file has page_size %d after plangate used it; want its 4096 kept", got)
	}
	code, out, errOut := cli(t, "", "store", "copy", "--from", "sqlite:"+old, "--to", "sqlite:"+dir+"/new.db")
	if code != 0 || !regexp.MustCompile(`^copied \d+ rows from .*/old.db to .*/new.db \(sessions 1, plans 1, messages [1-9]\d*, plan_events [1-9]\d*, nudges [1-9]\d*, outbox [1-9]\d*\)\n$`).MatchString(out) {
		t.Fatalf("copy: %d %q %s", code, out, errOut)
	}
	if got := sqlitePageSize(t, filepath.Join(dir, "new.db")); got != store.PageSize {
		t.Errorf("the copy has page_size %d, want %d", got, store.PageSize)
	}
	newCfg := writeConfig(t, "store: {path: "+dir+"/new.db}\n")
	if code, out, _ := cli(t, "", "sessions", "list", "--config", newCfg); code != 0 || !strings.Contains(out, "terminal:local:main") || !strings.Contains(out, "awaiting_approval") {
		t.Errorf("the session is not in the copy: %d %q", code, out)
	}
}
