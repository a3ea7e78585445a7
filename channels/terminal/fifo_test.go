//go:build unix

package terminal

import (
	"os"
	"syscall"
)

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

// unblockFIFO opens p for writing and closes it, so a reader stuck in open goes on.
func unblockFIFO(p string) {
	if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
