//go:build !linux

package main

import (
	"fmt"
	"os"
)

// unitStage exists on Linux only, where systemd and bubblewrap run.
func unitStage(stage string, _ []string) int {
	fmt.Fprintln(os.Stderr, "the unit emulation runs on Linux only; stage", stage)
	return 2
}
