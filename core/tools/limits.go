package tools

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits bound what one sandboxed command may use (tools.run_command.limits). A zero
// field takes its DefaultLimits value. With SandboxNone only Output applies.
//
//   - Processes counts the tasks (processes and their threads) running at once in the
//     command's process namespace.
//     RLIMIT_NPROC cannot do it: it counts every process of the user on the host (the
//     gateway's own threads and other commands included) and does not bind root at all,
//     and cgroups are rarely writable where plangate runs. The gateway counts instead,
//     every processPoll, and kills the whole namespace once the count is over the limit:
//     a fork bomb gets at most one interval of growth before all of it dies.
//   - Memory (RLIMIT_AS: address space), CPUTime (RLIMIT_CPU) and FileSize (RLIMIT_FSIZE)
//     are per process, set by prlimit inside the sandbox just before the program starts.
//   - TmpSize is the size of the command's private /tmp (a tmpfs, in memory).
//   - Output is how many bytes of output the command may write before it is stopped;
//     Config.MaxOutput is how many of them the result shows.
type Limits struct {
	Processes int
	Memory    int64
	CPUTime   time.Duration
	FileSize  int64
	TmpSize   int64
	Output    int64
}

// DefaultLimits are the limits of a zero Limits field.
var DefaultLimits = Limits{
	Processes: 1024,
	Memory:    4 << 30,
	CPUTime:   5 * time.Minute,
	FileSize:  1 << 30,
	TmpSize:   512 << 20,
	Output:    16 << 20,
}

// processPoll is how often the gateway counts a command's processes.
const processPoll = 10 * time.Millisecond

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	orDefault(&l.Processes, d.Processes)
	orDefault(&l.Memory, d.Memory)
	orDefault(&l.CPUTime, d.CPUTime)
	orDefault(&l.FileSize, d.FileSize)
	orDefault(&l.TmpSize, d.TmpSize)
	orDefault(&l.Output, d.Output)
	return l
}

// orDefault sets *v to d when it is not positive.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// prlimitArgs set the per-process limits for the program that follows them.
func (l Limits) prlimitArgs(prlimit string) []string {
	cpu := int64((l.CPUTime + time.Second - 1) / time.Second)
	// The soft limit sends SIGXCPU, which ends the process with a status that names
	// the limit; the hard limit, a second later, kills one that ignores it.
	return []string{prlimit,
		fmt.Sprintf("--as=%d", l.Memory),
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1),
		fmt.Sprintf("--fsize=%d", l.FileSize),
		"--"}
}

// Exit codes a shell or bwrap reports for a process ended by a limit's signal (128 plus
// SIGXCPU or SIGXFSZ).
const (
	exitCPULimit  = 128 + 24
	exitFileLimit = 128 + 25
)

// errOutputLimit is the cause of a command stopped for writing too much output.
var errOutputLimit = errors.New("output limit")

// limitNote explains, after a command that failed, which limit it likely ran into ("" when
// none). A signal's exit status is certain; the rest is read from the error messages
// programs print when the kernel refuses them.
func (l Limits) limitNote(code int, output string) string {
	low := strings.ToLower(output)
	switch {
	case code == exitCPULimit || strings.Contains(low, "cpu time limit exceeded"):
		return fmt.Sprintf("A process used up its CPU time limit (%s, tools.run_command.limits.cpu_time) and was stopped.", l.CPUTime)
	case code == exitFileLimit || strings.Contains(low, "file size limit exceeded"):
		return fmt.Sprintf("A process tried to write a file larger than %s (tools.run_command.limits.file_size) and was stopped.", formatBytes(l.FileSize))
	case strings.Contains(low, "no space left on device"):
		return fmt.Sprintf("If that was /tmp: it holds at most %s (tools.run_command.limits.tmp_size); write large files in the workspace instead.", formatBytes(l.TmpSize))
	case strings.Contains(low, "cannot allocate memory") || strings.Contains(low, "out of memory") || strings.Contains(low, "memoryerror"):
		return fmt.Sprintf("A process could not get more memory: each may use at most %s of address space (tools.run_command.limits.memory).", formatBytes(l.Memory))
	}
	return ""
}

// formatBytes shows n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
