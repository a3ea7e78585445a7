package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/store"
)

// damageMiddlePage writes garbage over a page in the middle of the database file.
func damageMiddlePage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(data[16:18]))
	page := len(data)/pageSize/2 + 1
	copy(data[(page-1)*pageSize:page*pageSize], strings.Repeat("\xde\xad\xbe\xef", pageSize/4))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// padStore adds rows so the file has enough pages for a damaged one to be in a table.
func padStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := st.SetChannelState(ctx, "test", "pad", fmt.Sprintf("k%03d", i), strings.Repeat("p", 400)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStoreCheckAndBackup(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig)
	dir := filepath.Dir(cfg)
	db := filepath.Join(dir, "plangate.db")
	if code, _, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	padStore(t, db)

	code, out, errOut := cli(t, "", "store", "check", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ok (quick_check)") {
		t.Fatalf("store check of a sound file: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = cli(t, "", "store", "check", "--full", "--config", cfg); code != 0 || !strings.Contains(out, "ok (integrity_check)") {
		t.Fatalf("store check --full: %d %q %q", code, out, errOut)
	}

	backup := filepath.Join(dir, "backup.db")
	if code, out, errOut = cli(t, "", "store", "backup", backup, "--config", cfg); code != 0 || !strings.Contains(out, "integrity ok") {
		t.Fatalf("store backup: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = cli(t, "", "store", "backup", backup, "--config", cfg); code != 1 || !strings.Contains(errOut, "refusing to overwrite") {
		t.Fatalf("a second backup onto the same file: %d %q", code, errOut)
	}
	// The backup is a working store with the session in it.
	bst, err := store.Open(context.Background(), backup)
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	sessions, err := bst.Sessions(context.Background())
	bst.Close()
	if err != nil || len(sessions) != 1 || sessions[0].ID != "terminal:local:main" {
		t.Fatalf("sessions in the backup: %+v, %v", sessions, err)
	}

	damageMiddlePage(t, db)
	code, out, errOut = cli(t, "", "store", "check", "--config", cfg)
	if code != 1 || strings.TrimSpace(out) == "" || !strings.Contains(errOut, "damaged") || !strings.Contains(errOut, ".recover") {
		t.Fatalf("store check of a damaged file: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if code, _, _ = cli(t, "", "store", "check", "--full", "--config", cfg); code != 1 {
		t.Fatalf("store check --full of a damaged file: exit %d", code)
	}
}

func TestChatAndServeRefuseADamagedStore(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig+`channels:
  telegram: {enabled: true, token: "1:x", api_url: "http://127.0.0.1:1"}
`)
	dir := filepath.Dir(cfg)
	db := filepath.Join(dir, "plangate.db")
	padStore(t, db)
	damageMiddlePage(t, db)
	for _, cmd := range []string{"chat", "serve"} {
		code, out, errOut := cli(t, "hello\n", cmd, "--config", cfg)
		if code != 1 {
			t.Errorf("%s on a damaged store: exit %d, stdout %q", cmd, code, out)
		}
		for _, want := range []string{"refusing to start", db, "quick_check", "sqlite3 " + db + " .recover"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: the refusal lacks %q:\n%s", cmd, want, errOut)
			}
		}
	}
}

func TestStoreUsage(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig)
	for _, args := range [][]string{
		{"store"},
		{"store", "compact"},
		{"store", "backup", "--config", cfg},
		{"store", "backup", "a.db", "b.db", "--config", cfg},
		{"store", "check", "extra", "--config", cfg},
	} {
		if code, _, errOut := cli(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d (%q), want a usage error", args, code, errOut)
		}
	}
}

// -h and --help after a command list its flags on stdout and exit 0, starting nothing:
// no database file appears where the default configuration would put it.
func TestCommandHelp(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"serve", "--help"},
		{"chat", "-h"},
		{"sessions", "list", "--help"},
		{"store", "migrate", "-h"},
	} {
		code, out, errOut := cli(t, "", args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, errOut)
		}
		for _, want := range []string{"-config", "Usage:"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: stdout lacks %q:\n%s", args, want, out)
			}
		}
	}
	if entries, err := os.ReadDir("."); err != nil || len(entries) != 0 {
		t.Errorf("help left files behind: %v %v", entries, err)
	}
}
