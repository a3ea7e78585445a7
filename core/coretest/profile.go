package coretest

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TimedProfile profiles the timed part of benchmark b alone (a -cpuprofile also holds
// its setup): with the environment variable cpuEnv set to a prefix it starts a CPU
// profile into <prefix>-<case>.prof, the case's name below the benchmark with '/' as
// '-'; with memEnv set (when memEnv is not "") it writes the allocation profile instead,
// before and after (<prefix>-<case>.before.heap and .after.heap, sampled every 4 KB), so
// pprof -diff_base=before after shows what the timed part allocated. The function
// returned ends it. The benchmark's last run, the one reported, overwrites the earlier
// ones'.
func TimedProfile(b testing.TB, cpuEnv, memEnv string) func() {
	b.Helper()
	_, name, _ := strings.Cut(b.Name(), "/")
	name = strings.ReplaceAll(name, "/", "-")
	if mem := os.Getenv(memEnv); memEnv != "" && mem != "" {
		runtime.MemProfileRate = 4096
		heap := func(when string) {
			f, err := os.Create(mem + "-" + name + "." + when + ".heap")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
		}
		heap("before")
		return func() { heap("after") }
	}
	prefix := os.Getenv(cpuEnv)
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + "-" + name + ".prof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// ProcessCPU is the CPU time the process has used, user and system, every thread.
func ProcessCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
