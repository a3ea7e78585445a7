//go:build !linux

package core

import (
	"os"
	"path/filepath"
)

// replaceFile renames sessionDir/tmp over sessionDir/name.
func replaceFile(root *os.Root, dir *os.File, sessionDir, tmp, name string) error {
	return root.Rename(filepath.Join(sessionDir, tmp), filepath.Join(sessionDir, name))
}
