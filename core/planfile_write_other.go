//go:build !linux

package core

import "os"

// replace writes data under sessionDir/name: elsewhere than on Linux, into a new file
// renamed over the old (the exchange and the leases of planfile_write_linux.go are
// Linux's).
func (pf *planFiles) replace(root *os.Root, sessionDir, name string, data []byte) error {
	return pf.createAndRename(root, sessionDir, name, data)
}
