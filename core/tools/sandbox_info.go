package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
)

// sandboxInfo reads the pid of the sandbox's first process from bwrap's --info-fd. That
// process is init of the command's process namespace: when it has exited, the kernel has
// killed and reaped every process of the namespace, orphans and setsid children
// included. After a timeout kill, bwrap itself exits at once and its namespace ends an
// instant later; waitGone waits for that, so no process outlives run_command.
type sandboxInfo struct {
	r, w   *os.File
	filter *os.File // the seccomp filter's pipe, bwrap's to read
	// gone receives a wait function for the namespace's end (nil: nothing to wait for).
	gone chan func(time.Duration)
	// maxProcs, when positive, is the most processes the namespace may hold at once;
	// overProcs is set when it held more and was killed for it.
	maxProcs  int
	overProcs atomic.Bool
}

// newSandboxInfo gives cmd the info pipe as its fd 3 and the seccomp filter as its fd 4
// (sandboxFDs).
func newSandboxInfo(cmd *exec.Cmd) (*sandboxInfo, error) {
	filter, err := seccompPipe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		filter.Close()
		return nil, fmt.Errorf("creating the sandbox's info pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w, filter}
	return &sandboxInfo{r: r, w: w, filter: filter, gone: make(chan func(time.Duration), 1)}, nil
}

// started closes the parent's copy of the pipe's write end and reads the child pid. The
// process handle is taken at once, while bwrap still holds its child, so the pid cannot
// have been reused by another process.
func (s *sandboxInfo) started() {
	if s == nil {
		return
	}
	_ = s.w.Close()
	_ = s.filter.Close()
	go func() {
		defer s.r.Close()
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		// bwrap writes the object once the sandbox is set up; EOF without it means
		// bwrap failed before, and there is nothing to wait for.
		if err := json.NewDecoder(s.r).Decode(&info); err != nil || info.ChildPID <= 0 {
			s.gone <- nil
			return
		}
		if s.maxProcs > 0 {
			limitProcs(info.ChildPID, s.maxProcs, &s.overProcs)
		}
		s.gone <- watchPid(info.ChildPID)
	}()
}

func (s *sandboxInfo) close() {
	if s != nil {
		_ = s.r.Close()
		_ = s.w.Close()
		_ = s.filter.Close()
	}
}

// waitGone waits at most max for the namespace's init to exit, once bwrap has exited.
func (s *sandboxInfo) waitGone(max time.Duration) {
	if s == nil {
		return
	}
	select {
	case wait := <-s.gone:
		if wait != nil {
			wait(max)
		}
	case <-time.After(max):
		// Release the process handle whenever it comes.
		go func() {
			if wait := <-s.gone; wait != nil {
				wait(0)
			}
		}()
	}
}
