//go:build unix

package terminal

import (
	"os"
	"syscall"
)

// openNoBlock opens p for reading without waiting: opening a FIFO that has no writer
// returns at once instead of blocking. It makes no difference to a regular file.
func openNoBlock(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
