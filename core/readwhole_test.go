package core_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// twoSessions makes plans/A/a.md (holding "A v1") and plans/B, and returns the paths of
// a.md and of B's b.md (not yet there).
func twoSessions(t *testing.T) (a, b string) {
	t.Helper()
	plans := t.TempDir()
	for _, d := range []string{"A", "B"} {
		if err := os.Mkdir(filepath.Join(plans, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, b = filepath.Join(plans, "A", "a.md"), filepath.Join(plans, "B", "b.md")
	if err := os.WriteFile(a, []byte("A v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestReadWholeOvertakenByTwoRewrites(t *testing.T) {
	a, b := twoSessions(t)
	reads := coretest.OvertakeRead(t, a, b, []byte("A v2"), []byte("B's secret plan"))
	got, err := core.ReadWhole(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "A v2" {
		t.Fatalf("ReadWhole(a.md) = %q, want a.md's own content %q", got, "A v2")
	}
	// The race did happen: the first read held the file that is now b.md.
	if n := reads(); n != 2 {
		t.Errorf("%d reads, want 2 (the overtaken one discarded)", n)
	}
	if other, err := os.ReadFile(b); err != nil || string(other) != "B's secret plan" {
		t.Errorf("b.md = %q, %v: the overtaking did not happen as staged", other, err)
	}
}

func TestReadWholeGivesUpOnAFileThatKeepsChanging(t *testing.T) {
	a, _ := twoSessions(t)
	n := 0
	defer core.SetReadWholeHook(func(p string) {
		if p != a {
			return
		}
		n++
		fresh := a + ".next"
		if err := os.WriteFile(fresh, []byte("A again"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(fresh, a); err != nil {
			t.Error(err)
		}
	})()
	got, err := core.ReadWhole(a)
	if err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Fatalf("ReadWhole = %q, %v; want an error saying the file kept changing", got, err)
	}
	if n < 2 || n > 100 {
		t.Errorf("%d attempts, want a few, bounded", n)
	}
}

func TestReadWholePlainFiles(t *testing.T) {
	a, _ := twoSessions(t)
	if got, err := core.ReadWhole(a); err != nil || string(got) != "A v1" {
		t.Errorf("ReadWhole = %q, %v; want %q", got, err, "A v1")
	}
	// A symbolic link is followed by the open and by the check alike.
	link := filepath.Join(t.TempDir(), "link.md")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if got, err := core.ReadWhole(link); err != nil || string(got) != "A v1" {
		t.Errorf("ReadWhole(link) = %q, %v; want %q", got, err, "A v1")
	}
	empty := filepath.Join(t.TempDir(), "empty.md")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := core.ReadWhole(empty); err != nil || len(got) != 0 {
		t.Errorf("ReadWhole(empty) = %q, %v", got, err)
	}
	big := filepath.Join(t.TempDir(), "big.md")
	want := strings.Repeat("0123456789abcdef", 40000)
	if err := os.WriteFile(big, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := core.ReadWhole(big); err != nil || string(got) != want {
		t.Errorf("ReadWhole(big): %d bytes, %v; want %d", len(got), err, len(want))
	}
	if _, err := core.ReadWhole(a + ".gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadWhole of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// The file being deleted after the open: nothing vouches for what was read, and the
// next attempt reports the file missing.
func TestReadWholeFileRemovedWhileRead(t *testing.T) {
	a, _ := twoSessions(t)
	defer core.SetReadWholeHook(func(p string) {
		if p == a {
			_ = os.Remove(a)
		}
	})()
	if got, err := core.ReadWhole(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadWhole = %q, %v; want fs.ErrNotExist", got, err)
	}
}

// The engine's own read (the old file whose "## Changes" section a rewrite keeps) is
// checked the same way.
func TestReadPlanFileOvertakenByTwoRewrites(t *testing.T) {
	a, b := twoSessions(t)
	reads := coretest.OvertakeRead(t, a, b, []byte("A v2"), []byte("B's secret plan"))
	plans := filepath.Dir(filepath.Dir(a))
	if got := core.ReadPlanFile(plans, "A", "a.md"); string(got) != "A v2" {
		t.Fatalf("readPlanFile(a.md) = %q, want a.md's own content %q", got, "A v2")
	}
	if n := reads(); n != 2 {
		t.Errorf("%d reads, want 2 (the overtaken one discarded)", n)
	}
}

// BenchmarkReadWhole compares ReadWhole with os.ReadFile on a 2 KB plan file: the check
// costs an fstat and a stat.
func BenchmarkReadWhole(b *testing.B) {
	path := filepath.Join(b.TempDir(), "plan.md")
	if err := os.WriteFile(path, []byte(strings.Repeat("- [ ] a step of the plan\n", 80)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		read func(string) ([]byte, error)
	}{{"ReadWhole", core.ReadWhole}, {"os.ReadFile", os.ReadFile}} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.read(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
