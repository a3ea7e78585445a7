//go:build linux

package core_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/plangate/plangate/core"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// The real writers, run where a preempted open would be overtaken (after ReadWhole's
// open): rewrite 1 makes a.md's old file X the spare, and rewrite 2, of another session,
// would fill X and swap it in as b.md, as it does with no reader (the first half).
// ReadWhole's descriptor keeps X out of reach: the lease is refused, b.md is another
// file, and ReadWhole returns a.md's new content. This is the premise of ReadWhole's
// argument; the staged race (coretest.OvertakeRead) covers what happens before the open
// returns.
func TestReadWholeDescriptorKeepsTheSpareFromBeingRefilled(t *testing.T) {
	stage := func(t *testing.T) (plans string, x uint64) {
		plans = filepath.Join(t.TempDir(), "plans")
		for _, w := range []struct{ dir, name, data string }{{"A", "a.md", "A v1"}, {"B", "b.md", "B v1"}} {
			if _, err := core.WritePlanFile(plans, w.dir, w.name, []byte(w.data)); err != nil {
				t.Fatal(err)
			}
		}
		return plans, inode(t, filepath.Join(plans, "A", "a.md"))
	}
	rewrites := func(t *testing.T, plans string) {
		for _, w := range []struct{ dir, name, data string }{{"A", "a.md", "A v2"}, {"B", "b.md", "B's secret plan"}} {
			if _, err := core.WritePlanFile(plans, w.dir, w.name, []byte(w.data)); err != nil {
				t.Error(err)
			}
		}
	}

	plans, x := stage(t)
	rewrites(t, plans)
	if inode(t, filepath.Join(plans, "B", "b.md")) != x {
		t.Skip("rewrite 2 did not reuse a.md's old file even with no reader (no leases here?)")
	}

	plans, x = stage(t)
	a := filepath.Join(plans, "A", "a.md")
	reads := 0
	defer core.SetReadWholeHook(func(p string) {
		if p != a {
			return
		}
		if reads++; reads == 1 {
			rewrites(t, plans)
		}
	})()
	got, err := core.ReadWhole(a)
	if err != nil || string(got) != "A v2" {
		t.Fatalf("ReadWhole(a.md) = %q, %v; want %q", got, err, "A v2")
	}
	if inode(t, filepath.Join(plans, "B", "b.md")) == x {
		t.Errorf("rewrite 2 refilled the file a reader held open")
	}
	if b, err := os.ReadFile(filepath.Join(plans, "B", "b.md")); err != nil || string(b) != "B's secret plan" {
		t.Errorf("b.md = %q, %v", b, err)
	}
}
