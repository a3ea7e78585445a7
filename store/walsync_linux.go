package store

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back (its size, which
// grows as frames are appended): what a WAL commit needs. SQLite, as the driver builds
// it, calls fsync (it does not trust every system's fdatasync); Linux's is exact, and
// spares the journal commit of the file's times.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
