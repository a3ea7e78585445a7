//go:build !linux

package store

import "os"

// datasync flushes f to stable storage: fdatasync is Linux's; elsewhere os.File.Sync
// (on macOS F_FULLFSYNC, stronger than SQLite's default fsync).
func datasync(f *os.File) error {
	return f.Sync()
}
