//go:build linux

package core

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// replaceFile puts sessionDir/tmp in place of sessionDir/name. Where name is a regular
// file it swaps the two by renameat2(RENAME_EXCHANGE) and removes the displaced file:
// ext4 starts writing back a file renamed over another at once, which makes that rename
// cost more than the exchange and the removal together. Otherwise (no file by that
// name, a symbolic link, no exchange on this file system) it renames.
func replaceFile(root *os.Root, dir *os.File, sessionDir, tmp, name string) error {
	fd := int(dir.Fd())
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
		unix.Renameat2(fd, tmp, fd, name, unix.RENAME_EXCHANGE) == nil {
		if err := unix.Unlinkat(fd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			// Not a file after all (a directory swapped in meanwhile): put it back.
			_ = unix.Renameat2(fd, tmp, fd, name, unix.RENAME_EXCHANGE)
			return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: err}
		}
		return nil
	}
	return root.Rename(filepath.Join(sessionDir, tmp), filepath.Join(sessionDir, name))
}
