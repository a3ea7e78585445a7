//go:build linux

package tools

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// watchPid takes a pidfd on pid (not a child of ours) and returns a function that waits
// at most max for the process to exit: a pidfd becomes readable when it has.
func watchPid(pid int) func(time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // ESRCH: already gone
	}
	return func(max time.Duration) {
		defer unix.Close(fd)
		deadline := time.Now().Add(max)
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n > 0 {
				return
			}
		}
	}
}
