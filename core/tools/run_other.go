//go:build !unix

package tools

import "os/exec"

// killProcessGroup keeps exec's default on systems without Unix process groups: the
// command itself is killed; children it started may outlive it.
func killProcessGroup(cmd *exec.Cmd) {}
