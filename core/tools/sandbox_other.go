//go:build !linux

package tools

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// watchPid has nothing to watch where bwrap does not run.
func watchPid(int) func(time.Duration) { return nil }

// limitProcs has nothing to count where bwrap does not run.
func limitProcs(int, int, *atomic.Bool) {}

// canCountProcs: there is nothing to count where bwrap does not run.
func canCountProcs() bool { return true }

// seccompPipe: there is no filter where bwrap does not run.
func seccompPipe() (*os.File, error) { return nil, errors.New("no seccomp filter on this system") }
