//go:build unix

package tools

import (
	"io/fs"
	"os/exec"
	"syscall"
)

// openNonBlock keeps open(2) from waiting for a FIFO's writer.
const openNonBlock = syscall.O_NONBLOCK

// linkCount is the number of hard links of a file (1 when unknown).
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// killProcessGroup starts the command in its own process group and makes cancellation
// kill the whole group, so a timeout also stops the children it started.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
