package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errRunDisabled is the answer to run_command when tools.run_command.enabled is false.
var errRunDisabled = errors.New("run_command is disabled in this gateway (tools.run_command.enabled is false); use the file tools, or ask the user to run the command")

// killGrace is how long a killed command's children may keep its output open before the
// pipes are closed on them.
const killGrace = 2 * time.Second

// runCommand runs argv without a shell in dir. A non-zero exit is a result, not an error:
// failing tests are information for the model. Timeouts and refusals are errors.
func (t *Toolbox) runCommand(ctx context.Context, dir string, a runArgs) (string, error) {
	exe, path, err := t.program(a.Argv)
	if err != nil {
		return "", err
	}
	prog := a.Argv[0]
	if a.TimeoutSeconds < 0 {
		return "", fmt.Errorf("timeout_seconds must be positive (got %d)", a.TimeoutSeconds)
	}
	timeout := t.cfg.CommandTimeout
	if s := a.TimeoutSeconds; s > 0 && int64(s) < int64(timeout/time.Second) {
		timeout = time.Duration(s) * time.Second
	}
	home, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving the workspace directory: %w", err)
	}
	r, err := t.runSandboxed(ctx, home, exe, path, a.Argv, timeout)
	if err != nil {
		return "", err
	}
	out, runErr, restored := r.out, r.err, r.restored
	shown := displayArgv(a.Argv)
	var startErr *startError
	switch {
	case errors.As(runErr, &startErr):
		return "", fmt.Errorf("starting %s failed: %v", prog, unwrapExec(startErr.err))
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s was stopped: the turn was cancelled", shown)
	case errors.Is(runErr, errProcessLimit):
		return "", fmt.Errorf("%s was stopped: it ran more than %d processes or threads at once (the limit tools.run_command.limits.processes), and all of them were killed; output so far:\n%s%s",
			shown, t.cfg.Limits.Processes, out.String(), restored)
	case errors.Is(r.cause, errOutputLimit):
		return "", fmt.Errorf("%s was stopped: it wrote more than %s of output (the limit tools.run_command.limits.output); send long output to a file in the workspace and read parts of it. Output so far:\n%s%s",
			shown, formatBytes(t.cfg.Limits.Output), out.String(), restored)
	case r.timedOut:
		return "", fmt.Errorf("%s timed out after %s and was killed with its child processes; output so far:\n%s%s",
			shown, timeout, out.String(), restored)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", shown)
	var exitErr *exec.ExitError
	switch {
	case runErr == nil || errors.Is(runErr, exec.ErrWaitDelay):
		b.WriteString("exit code: 0\n")
	case errors.As(runErr, &exitErr) && exitErr.ExitCode() >= 0:
		fmt.Fprintf(&b, "exit code: %d\n", exitErr.ExitCode())
	case errors.As(runErr, &exitErr):
		fmt.Fprintf(&b, "terminated: %v\n", exitErr.ProcessState)
	default:
		return "", fmt.Errorf("running %s: %v", shown, runErr)
	}
	if errors.Is(runErr, exec.ErrWaitDelay) {
		b.WriteString("(the program exited but a child process kept its output open; the rest was cut off)\n")
	}
	if out.Total() == 0 {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(out.String())
	}
	if exitErr != nil && exitErr.ExitCode() > 0 && t.sandbox != nil {
		if note := t.cfg.Limits.limitNote(exitErr.ExitCode(), out.String()); note != "" {
			b.WriteString(note + "\n")
		}
	}
	if restored != "" {
		b.WriteString(restored + "\n")
	}
	return b.String(), nil
}

// sandboxed is one sandboxed run of a program: its output, how the process ended, why it
// was stopped (errOutputLimit) or whether it timed out, and the note of what was put back.
type sandboxed struct {
	out      *cappedBuffer
	err      error
	cause    error
	timedOut bool
	restored string
}

// runSandboxed runs argv in home for at most timeout. What it changed of the plan's copy
// and of .git is put back before anything else: a timeout or a cancelled turn must not
// leave them changed either.
func (t *Toolbox) runSandboxed(ctx context.Context, home, exe, path string, argv []string, timeout time.Duration) (sandboxed, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	octx, stop := context.WithCancelCause(cctx)
	defer stop(nil)
	out := newCappedBuffer(t.cfg.MaxOutput)
	out.limit, out.onLimit = t.cfg.Limits.Output, func() { stop(errOutputLimit) }
	gitBefore, err := snapshotGit(home)
	if err != nil {
		return sandboxed{}, err
	}
	before := t.snapshotPlanCopy(home)
	runErr := t.execute(octx, home, exe, path, argv, out)
	restored := joinNotes(before.restore(), gitBefore.restore())
	return sandboxed{out: out, err: runErr, cause: context.Cause(octx), timedOut: errors.Is(cctx.Err(), context.DeadlineExceeded), restored: restored}, nil
}

// program applies run_command's rules to argv: a program and its arguments, no NUL, a
// program listed in tools.run_command.allow by its exact name and found where commands
// look. It returns the executable and the PATH commands get.
func (t *Toolbox) program(argv []string) (exe, path string, err error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", "", errors.New(`argv is required: the program and its arguments as separate strings, e.g. ["ls", "-l", "docs"]`)
	}
	for _, arg := range argv {
		if strings.ContainsRune(arg, 0) {
			return "", "", errors.New("argv must not contain NUL bytes")
		}
	}
	prog := argv[0]
	if len(t.cfg.Allow) == 0 {
		return "", "", errors.New("run_command may not start any program: none are listed in tools.run_command.allow; ask the gateway's operator to list the programs the agent may run, or use the file tools")
	}
	if !slices.Contains(t.cfg.Allow, prog) {
		return "", "", t.notAllowed(prog)
	}
	path = commandPath()
	if t.sandbox != nil {
		path = sandboxPath(path)
	}
	exe, err = resolveProgram(prog, path, t.sandbox != nil)
	if err != nil {
		return "", "", err
	}
	return exe, path, nil
}

// joinNotes joins the non-empty notes, one a line.
func joinNotes(notes ...string) string {
	var keep []string
	for _, n := range notes {
		if n != "" {
			keep = append(keep, n)
		}
	}
	return strings.Join(keep, "\n")
}

// startError marks a command that never started.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }

// execute runs exe with argv[1:] in the workspace home, in the sandbox unless it is
// off, with output to out. When it returns, the command and every process it started
// have ended: the sandbox's process namespace is waited for after a kill.
func (t *Toolbox) execute(ctx context.Context, home, exe, path string, argv []string, out *cappedBuffer) error {
	var cmd *exec.Cmd
	if t.sandbox != nil {
		cmd = exec.CommandContext(ctx, t.sandbox.bwrap, t.sandbox.args(home, exe, argv[1:])...)
		cmd.Env = commandEnv(sandboxHome, path)
	} else {
		cmd = exec.CommandContext(ctx, exe, argv[1:]...)
		cmd.Args[0] = argv[0]
		cmd.Env = commandEnv(home, path)
	}
	cmd.Dir = home
	cmd.Stdout = out
	cmd.Stderr = out // the same writer: exec copies both through one pipe, in order
	cmd.WaitDelay = killGrace
	killProcessGroup(cmd)
	var info *sandboxInfo
	if t.sandbox != nil {
		var err error
		if info, err = newSandboxInfo(cmd); err != nil {
			return &startError{err}
		}
		info.maxProcs = t.sandbox.limits.Processes
	}
	if err := cmd.Start(); err != nil {
		info.close()
		return &startError{err}
	}
	info.started()
	err := cmd.Wait()
	info.waitGone(killGrace)
	if info != nil && info.overProcs.Load() {
		return errProcessLimit
	}
	return err
}

// errProcessLimit marks a command killed for running too many processes.
var errProcessLimit = errors.New("process limit")

// notAllowed explains a refused program; the exact-name rule is why env, sh, xargs and
// /usr/bin/<listed> are refused unless listed as written.
func (t *Toolbox) notAllowed(prog string) error {
	hint := "programs are matched by their exact name, and wrappers such as env, sh or xargs run only if listed themselves"
	switch {
	case strings.ContainsAny(prog, " \t"):
		hint = "argv[0] contains spaces: pass the program and each argument as separate array elements, without a shell"
	case strings.ContainsAny(prog, `/\`):
		hint = "a program given with a path runs only when that exact path is listed; use the bare name"
	}
	return fmt.Errorf("%q is not an allowed program (allowed: %s); %s", prog, strings.Join(t.cfg.Allow, ", "), hint)
}

// resolveProgram finds a bare program name in path (absolute entries only, so a "." in
// PATH cannot pick up a file from the workspace). A name with a path separator is used as
// written; a relative one starts in the workspace directory.
func resolveProgram(prog, path string, sandboxed bool) (string, error) {
	if strings.ContainsAny(prog, `/\`) {
		return prog, nil
	}
	for _, d := range filepath.SplitList(path) {
		if exe, err := exec.LookPath(filepath.Join(d, prog)); err == nil {
			return exe, nil
		}
	}
	if sandboxed {
		return "", fmt.Errorf("%s is allowed but not installed where the sandbox looks (PATH %s; commands see only the host's %s)", prog, path, strings.Join(systemDirs[:3], ", "))
	}
	return "", fmt.Errorf("%s is allowed but not installed on the gateway's machine (not found in PATH)", prog)
}

// sandboxPath keeps the entries of path that lie in the sandbox's root, so a program is
// found where the command can run it.
func sandboxPath(path string) string {
	return filterPath(path, func(d string) bool { return visibleInSandbox(filepath.Clean(d)) })
}

// commandPath is the gateway's PATH without relative entries.
func commandPath() string {
	return filterPath(os.Getenv("PATH"), filepath.IsAbs)
}

// filterPath keeps the entries of path that keep accepts, or gives a default PATH when
// none is left.
func filterPath(path string, keep func(string) bool) string {
	var kept []string
	for _, d := range filepath.SplitList(path) {
		if keep(d) {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return strings.Join(kept, string(filepath.ListSeparator))
}

// commandEnv is the whole environment a command sees: nothing of the gateway's own
// environment (API keys, bot tokens) leaks into it.
func commandEnv(home, path string) []string {
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	return []string{"PATH=" + path, "HOME=" + home, "LANG=" + lang}
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// displayArgv shows argv as one line, quoting arguments that need it.
func displayArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// cappedBuffer keeps the first and the last part of a command's output: the start says
// what ran, the end usually holds the error or the summary.
type cappedBuffer struct {
	headMax, tailMax int
	head, tail       []byte
	total            int
	// limit, when positive, is the output after which onLimit is called, once: the
	// command is stopped, and the buffer keeps taking what it still writes.
	limit   int64
	onLimit func()
}

func newCappedBuffer(limit int) *cappedBuffer {
	h := limit / 2
	return &cappedBuffer{headMax: h, tailMax: limit - h}
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	before := int64(c.total)
	c.total += len(p)
	if c.limit > 0 && before <= c.limit && int64(c.total) > c.limit && c.onLimit != nil {
		c.onLimit()
	}
	rest := p
	if room := c.headMax - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		c.tail = append(c.tail, rest...)
		if len(c.tail) > 2*c.tailMax {
			c.tail = append([]byte(nil), c.tail[len(c.tail)-c.tailMax:]...)
		}
	}
	return len(p), nil
}

// Total is the number of bytes written, kept or not.
func (c *cappedBuffer) Total() int { return c.total }

func (c *cappedBuffer) String() string {
	tail := c.tail
	if len(tail) > c.tailMax {
		tail = tail[len(tail)-c.tailMax:]
	}
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(c.head), "\uFFFD"))
	if omitted := c.total - len(c.head) - len(tail); omitted > 0 {
		fmt.Fprintf(&b, "\n… (%d bytes of output omitted; %d in total) …\n", omitted, c.total)
	}
	b.WriteString(strings.ToValidUTF8(string(tail), "\uFFFD"))
	if c.total > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}
