package coretest

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/plangate/plangate/core"
)

// OvertakeRead makes the first core.ReadWhole of path (after its open, before its read)
// meet what two rewrites overtaking a preempted open do on Linux (see core.ReadWhole):
// path gets a new file holding next, and the file the open took, no longer named path,
// is filled with other and linked as otherPath (another session's plan). A reader that
// does not check what it read returns other. It returns the number of times
// core.ReadWhole reached its read of path so far (the first read is the overtaken one).
// The hook is removed when the test ends.
func OvertakeRead(t testing.TB, path, otherPath string, next, other []byte) func() int {
	t.Helper()
	var reads atomic.Int32
	restore := core.SetReadWholeHook(func(p string) {
		if p != path || reads.Add(1) != 1 {
			return
		}
		// Rewrite 1: the open's file X goes under another name (the spare's), path gets
		// a new file. Rewrite 2: X is filled with another session's plan and swapped in
		// as that plan's file.
		spare := filepath.Join(filepath.Dir(otherPath), ".overtaken-spare")
		fresh := path + ".next"
		steps := []func() error{
			func() error { return os.Link(path, spare) },
			func() error { return os.WriteFile(fresh, next, 0o644) },
			func() error { return os.Rename(fresh, path) },
			func() error { return os.WriteFile(spare, other, 0o644) },
			func() error { return os.Rename(spare, otherPath) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Errorf("overtaking the read of %s: %v", path, err)
				return
			}
		}
	})
	t.Cleanup(restore)
	return func() int { return int(reads.Load()) }
}

// The contents OvertakenPlanFile stages.
const (
	OvertakenNext  = "# A's plan, v1, step 1 done" // the plan file's content after the first read
	OvertakenOther = "# B's secret plan"           // what the overtaken read's file then holds
)

// OvertakenPlanFile writes session A's plan file under a new plans directory (beside
// session B's directory) and stages OvertakeRead on it: a reader that checks what it read
// returns OvertakenNext, one that does not returns OvertakenOther. It returns the file's
// path and OvertakeRead's count of reads.
func OvertakenPlanFile(t testing.TB) (path string, reads func() int) {
	t.Helper()
	plans := t.TempDir()
	path, other := filepath.Join(plans, "A", "plan-v1.md"), filepath.Join(plans, "B", "plan-v1.md")
	for _, d := range []string{filepath.Dir(path), filepath.Dir(other)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte("# A's plan, v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, OvertakeRead(t, path, other, []byte(OvertakenNext), []byte(OvertakenOther))
}
