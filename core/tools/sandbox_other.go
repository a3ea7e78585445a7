//go:build !linux

package tools

import "time"

// watchPid has nothing to watch where bwrap does not run.
func watchPid(int) func(time.Duration) { return nil }
