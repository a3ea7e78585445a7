//go:build !unix

package tools

import (
	"io/fs"
	"os/exec"
)

// openNonBlock is 0 where open(2) has no O_NONBLOCK.
const openNonBlock = 0

// linkCount reports 1: link counts are not available here.
func linkCount(fs.FileInfo) uint64 { return 1 }

// killProcessGroup keeps exec's default on systems without Unix process groups: the
// command itself is killed; children it started may outlive it.
func killProcessGroup(cmd *exec.Cmd) {}
