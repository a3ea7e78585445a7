package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fillStore writes enough channel state that the file has many pages, and closes it, so
// the WAL is checkpointed into the main file.
func fillStore(t *testing.T, path string, rows int) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := s.SetChannelState(ctx, "telegram", "1", fmt.Sprintf("k%04d", i), strings.Repeat("v", 500)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// damagePage overwrites one page in the middle of the file with garbage and returns its
// number.
func damagePage(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(data[16:18]))
	pages := len(data) / pageSize
	if pages < 4 {
		t.Fatalf("the file has only %d pages", pages)
	}
	page := pages/2 + 1 // 1-based, never the header page
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", pageSize/4))
	copy(data[(page-1)*pageSize:], garbage)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return page
}

func TestCheckFindsADamagedPage(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plangate.db")
			fillStore(t, path, 200)
			if res, err := Check(context.Background(), path, full); err != nil || len(res.Problems) != 0 {
				t.Fatalf("a sound file: problems %v, err %v", res.Problems, err)
			}
			damagePage(t, path)
			res, err := Check(context.Background(), path, full)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Check of a damaged file = %v, want ErrDamaged", err)
			}
			if len(res.Problems) == 0 {
				t.Fatal("a damaged file reported no problems")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error %q does not name the file", err)
			}
		})
	}
}

func TestCheckChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	fillStore(t, path, 50)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), path, true); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("a check changed the database file")
	}
}

func TestCheckMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.db")
	if _, err := Check(context.Background(), path, false); err == nil || !strings.Contains(err.Error(), "no database file") {
		t.Fatalf("Check of a missing file = %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("Check created the file it was asked to check")
	}
}

func TestBackupIsReadable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 300 {
		if err := s.SetChannelState(ctx, "slack", "T1", fmt.Sprintf("k%04d", i), fmt.Sprintf("value %d %s", i, strings.Repeat("x", 300))); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(dir, "copy.db")
	res, err := s.Backup(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages < 10 || res.SchemaVersion < 1 {
		t.Errorf("backup result %+v: too few pages or no schema version", res)
	}
	// The source keeps working; the copy holds what was there when it was made.
	if err := s.SetChannelState(ctx, "slack", "T1", "later", "not in the copy"); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, dest)
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	defer c.Close()
	for _, i := range []int{0, 150, 299} {
		v, ok, err := c.ChannelState(ctx, "slack", "T1", fmt.Sprintf("k%04d", i))
		if err != nil || !ok || !strings.HasPrefix(v, fmt.Sprintf("value %d ", i)) {
			t.Errorf("row %d in the backup: %q, %v, %v", i, clip(v), ok, err)
		}
	}
	if _, ok, _ := c.ChannelState(ctx, "slack", "T1", "later"); ok {
		t.Error("a row written after the backup is in it")
	}
}

func TestBackupRefusesToOverwrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "plangate.db")
	fillStore(t, src, 5)
	dest := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(dest, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Backup(ctx, src, dest)
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("Backup onto an existing file = %v", err)
	}
	if data, _ := os.ReadFile(dest); string(data) != "precious" {
		t.Errorf("the existing file was changed to %q", clip(string(data)))
	}
	// The package function copies a file no one has open.
	res, err := Backup(ctx, src, filepath.Join(dir, "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	if res.SchemaVersion < 1 {
		t.Errorf("backup result %+v", res)
	}
}

func TestBackupOfADamagedFileFailsAndLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "plangate.db")
	fillStore(t, src, 200)
	damagePage(t, src)
	dest := filepath.Join(dir, "copy.db")
	if _, err := Backup(ctx, src, dest); err == nil {
		t.Fatal("a damaged database was backed up without complaint")
	}
	if _, err := os.Stat(dest); err == nil {
		t.Error("a failed backup left its file behind")
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func TestCheckNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is no database ", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), path, false)
	if !errors.Is(err, ErrDamaged) || len(res.Problems) == 0 {
		t.Fatalf("Check of a text file = %+v, %v; want ErrDamaged with a problem", res, err)
	}
}

// A check while the gateway runs sees its uncheckpointed writes and disturbs nothing.
func TestCheckWhileOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 50 {
		if err := s.SetChannelState(ctx, "telegram", "1", fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := Check(ctx, path, true); err != nil || len(res.Problems) != 0 {
		t.Fatalf("Check of an open store = %+v, %v", res, err)
	}
	if err := s.SetChannelState(ctx, "telegram", "1", "after", "v"); err != nil {
		t.Fatalf("writing after a check: %v", err)
	}
}

// Backup copies the open store into the new file dest, as the package function Backup
// copies a file.
func (s *Store) Backup(ctx context.Context, dest string) (BackupResult, error) {
	res, err := backupFrom(ctx, s.r.DB, dest)
	if err != nil {
		return res, fmt.Errorf("backing up store %s: %w", s.path, err)
	}
	return res, nil
}
