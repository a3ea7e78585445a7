package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Lease owners name their process: "<host>/<pid>/<random>". A lease whose owner is a
// process of this host that no longer exists was left by a killed plangate: it is taken
// over at once rather than after its expiry, so a restart right after kill -9 carries on
// without waiting out the ttl. A pid reused by another process only makes the wait
// happen (the safe side); another host's owner is always waited out.

// processOwner is this process's owner id, one per process: engines of one process (a
// test's restarted engine beside a hung one) share it, as they share the process's fate.
var processOwner = sync.OnceValue(newProcessOwner)

func newProcessOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s/%d/%s", strings.ReplaceAll(host, "/", "_"), os.Getpid(), newOwner())
}

// ownerGone reports whether owner names a process of this host that has ended.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || strings.ReplaceAll(host, "/", "_") != parts[0] {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// ProcessOwner is this process's lease owner id, for leases held outside the engine
// (the polling election).
func ProcessOwner() string { return processOwner() }

// OwnerGone reports whether a lease owner is a process of this host that has ended, so
// its lease can be taken over at once.
func OwnerGone(owner string) bool { return ownerGone(owner) }
