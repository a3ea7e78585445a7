//go:build linux

package tools

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// watchPid takes a pidfd on pid (not a child of ours) and returns a function that waits
// at most max for the process to exit.
func watchPid(pid int) func(time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // ESRCH: already gone
	}
	return func(max time.Duration) {
		defer unix.Close(fd)
		deadline := time.Now().Add(max)
		for left := max; left > 0; left = time.Until(deadline) {
			if exited(fd, int(left/time.Millisecond)+1) {
				return
			}
		}
	}
}

// exited polls the pidfd fd for at most ms milliseconds and reports whether its process
// has exited (a pidfd becomes readable when it has) or the poll failed; false after a
// timeout or a signal.
func exited(fd, ms int) bool {
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
	if errors.Is(err, unix.EINTR) {
		return false
	}
	return err != nil || n > 0
}

// limitProcs takes a pidfd on pid (the sandbox's init, not counted) at once and then, in
// the background, counts the processes under it every processPoll until it exits. When
// there are more than max, it sets over and kills pid: the kernel then kills every
// process of its namespace.
func limitProcs(pid, max int, over *atomic.Bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	go func() {
		defer unix.Close(fd)
		for !exited(fd, int(processPoll/time.Millisecond)) {
			if countProcs(pid, max) > max {
				over.Store(true)
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				return
			}
		}
	}()
}

// countProcs counts the tasks (processes and their threads: the kernel gives each a pid)
// of pid's descendants from /proc, stopping once past max.
func countProcs(pid, max int) int {
	n := 0
	queue := []int{pid}
	for len(queue) > 0 && n <= max {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		if err != nil {
			continue // exited meanwhile
		}
		if p != pid {
			n += len(tasks)
		}
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + task.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return n
}

// canCountProcs reports whether this kernel lists a task's children in /proc (the
// CONFIG_PROC_CHILDREN option), which counting a command's processes needs.
func canCountProcs() bool {
	pid := strconv.Itoa(os.Getpid())
	_, err := os.Stat("/proc/" + pid + "/task/" + pid + "/children")
	return err == nil
}
