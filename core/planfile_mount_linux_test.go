//go:build linux

package core

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A session directory that is another file system's (a mount point under the plans
// directory) takes its writes as any other: the new file is created beside the plan,
// on the same file system, so the rename works. Mounting needs privileges; without them
// the test is skipped.
func TestWritePlanFileIntoAnotherFileSystem(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	writeOrFail(t, plans, "a", "p.md", []byte("a v1\n"))
	writeOrFail(t, plans, "a", "p.md", []byte("a v2\n"))
	mounted := filepath.Join(plans, "b")
	if err := os.Mkdir(mounted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("plangate-test", mounted, "tmpfs", 0, ""); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mounted, unix.MNT_DETACH) })
	writeOrFail(t, plans, "b", "q.md", []byte("b v1\n"))
	writeOrFail(t, plans, "b", "q.md", []byte("b v2\n"))
	checkFile(t, filepath.Join(mounted, "q.md"), []byte("b v2\n"))
	if entries, _ := os.ReadDir(mounted); len(entries) != 1 {
		t.Errorf("the mounted session directory holds %v, want only the plan file", entries)
	}
	writeOrFail(t, plans, "a", "p.md", []byte("a v3\n"))
	checkFile(t, filepath.Join(plans, "a", "p.md"), []byte("a v3\n"))
}
