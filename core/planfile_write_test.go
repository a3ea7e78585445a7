package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritePlanFile(t *testing.T) {
	base := t.TempDir()
	plans := filepath.Join(base, "state", "plans") // does not exist yet
	data := []byte("# Plan\n")

	got, err := WritePlanFile(plans, "main", "plan-2026-11-30-x-v1.md", data)
	if err != nil {
		t.Fatalf("WritePlanFile: %v", err)
	}
	want := filepath.Join(plans, "main", "plan-2026-11-30-x-v1.md")
	if got != want {
		t.Errorf("WritePlanFile returned %q, want %q", got, want)
	}
	checkFile(t, want, data)

	// Rewriting replaces the content and leaves no temporary files behind.
	data2 := []byte("# Plan, revised\n")
	if _, err := WritePlanFile(plans, "main", "plan-2026-11-30-x-v1.md", data2); err != nil {
		t.Fatalf("rewriting: %v", err)
	}
	checkFile(t, want, data2)
	entries, err := os.ReadDir(filepath.Join(plans, "main"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("session directory holds %d entries, want only the plan file: %v", len(entries), entries)
	}

	// A relative plans directory is returned as given.
	t.Chdir(base)
	rel, err := WritePlanFile("plans", "s", "p.md", data)
	if err != nil || rel != filepath.Join("plans", "s", "p.md") {
		t.Errorf("relative plans dir: got %q, %v", rel, err)
	}
	checkFile(t, filepath.Join(base, "plans", "s", "p.md"), data)
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("%s has mode %v, want 0644", path, fi.Mode().Perm())
	}
}

func TestWritePlanFileRefusesEscapes(t *testing.T) {
	base := t.TempDir()
	plans := filepath.Join(base, "plans")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ name, sessionDir, file string }{
		{"parent session dir", "..", "p.md"},
		{"dot session dir", ".", "p.md"},
		{"empty session dir", "", "p.md"},
		{"traversal in session dir", "../outside", "p.md"},
		{"absolute session dir", outside, "p.md"},
		{"nested session dir", "a/b", "p.md"},
		{"backslash session dir", `a\b`, "p.md"},
		{"traversal in name", "main", "../../outside/p.md"},
		{"absolute name", "main", filepath.Join(outside, "p.md")},
		{"parent name", "main", ".."},
		{"dot name", "main", "."},
		{"empty name", "main", ""},
		{"name with a slash", "main", "x/p.md"},
		{"name with NUL", "main", "p\x00.md"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			p, err := WritePlanFile(plans, tc.sessionDir, tc.file, []byte("x"))
			if err == nil {
				t.Fatalf("WritePlanFile(%q, %q) = %q, want an error", tc.sessionDir, tc.file, p)
			}
			if !strings.Contains(err.Error(), "single path element") {
				t.Errorf("error %q should say why", err)
			}
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files were written outside the plans directory: %v", entries)
	}
	if _, err := os.Stat(plans); !os.IsNotExist(err) {
		t.Errorf("a refused write still created the plans directory (stat: %v)", err)
	}

	// A session directory that is a symbolic link out of the plans directory.
	if err := os.MkdirAll(plans, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(plans, "evil")); err != nil {
		t.Fatal(err)
	}
	if p, err := WritePlanFile(plans, "evil", "p.md", []byte("x")); err == nil {
		t.Errorf("WritePlanFile through a symlink out of the plans directory = %q, want an error", p)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a file was written through the symlink: %v", entries)
	}

	// A plan file name that is a symbolic link out of the plans directory: the link itself is
	// replaced; its target is untouched.
	target := filepath.Join(outside, "target.md")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(plans, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(plans, "main", "p.md")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlanFile(plans, "main", "p.md", []byte("plan")); err != nil {
		t.Fatalf("replacing a symlinked plan file: %v", err)
	}
	checkFile(t, target, []byte("keep"))
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the plan file should now be a regular file (mode %v, err %v)", fi.Mode(), err)
	}
	checkFile(t, link, []byte("plan"))

	// A session directory name taken by a regular file fails cleanly.
	if err := os.WriteFile(filepath.Join(plans, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlanFile(plans, "afile", "p.md", []byte("x")); err == nil {
		t.Errorf("WritePlanFile into a regular file succeeded")
	}
}

// The engine's own read of a plan file (the old rendering whose "## Changes" section a
// rewrite keeps) stays inside the plans directory: a plan file that is a symbolic link
// out of it reads as nothing; one inside it reads whole.
func TestReadPlanFileStaysInThePlansDirectory(t *testing.T) {
	base := t.TempDir()
	plans := filepath.Join(base, "plans")
	outside := filepath.Join(base, "outside.md")
	if err := os.WriteFile(outside, []byte("## Changes from v1\nnot a plan's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlanFile(plans, "s", "p.md", []byte("# Plan\n")); err != nil {
		t.Fatal(err)
	}
	if got := readPlanFile(plans, "s", "p.md"); string(got) != "# Plan\n" {
		t.Errorf("readPlanFile(p.md) = %q, want %q", got, "# Plan\n")
	}
	if err := os.Symlink(outside, filepath.Join(plans, "s", "link.md")); err != nil {
		t.Fatal(err)
	}
	if got := readPlanFile(plans, "s", "link.md"); got != nil {
		t.Errorf("readPlanFile through a link out of the plans directory = %q, want nothing", got)
	}
}
