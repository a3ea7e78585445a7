//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// killProcessGroup starts the command in its own process group and makes cancellation
// kill the whole group, so a timeout also stops the children it started.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
