//go:build !linux

package core

// replace leaves every write to the portable path (createAndRename) elsewhere than on
// Linux: the exchange and the leases of planfile_write_linux.go are Linux's.
func (pf *planFiles) replace(plansDir, sessionDir, name string, data []byte) (bool, error) {
	return false, nil
}
