//go:build !linux

package tools

import (
	"sync/atomic"
	"time"
)

// watchPid has nothing to watch where bwrap does not run.
func watchPid(int) func(time.Duration) { return nil }

// limitProcs has nothing to count where bwrap does not run.
func limitProcs(int, int, *atomic.Bool) {}

// canCountProcs: there is nothing to count where bwrap does not run.
func canCountProcs() bool { return true }
