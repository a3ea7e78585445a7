//go:build linux

package core

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A session directory that is another file system's (a mount point under the plans
// directory) cannot take the spare, which lives on the plans directory's: the write
// still goes in, into a new file beside the plan, as it did before there was a spare.
// Mounting needs privileges; without them the test is skipped.
func TestWritePlanFileIntoAnotherFileSystem(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var pf planFiles
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v1\n"))
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v2\n")) // a v1 is now the spare
	mounted := filepath.Join(plans, "b")
	if err := os.Mkdir(mounted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("plangate-test", mounted, "tmpfs", 0, ""); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mounted, unix.MNT_DETACH) })
	writeOrFail(t, &pf, plans, "b", "q.md", []byte("b v1\n"))
	writeOrFail(t, &pf, plans, "b", "q.md", []byte("b v2\n"))
	checkFile(t, filepath.Join(mounted, "q.md"), []byte("b v2\n"))
	if entries, _ := os.ReadDir(mounted); len(entries) != 1 {
		t.Errorf("the mounted session directory holds %v, want only the plan file", entries)
	}
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v3\n"))
	checkFile(t, filepath.Join(plans, "a", "p.md"), []byte("a v3\n"))
}
