package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sandbox modes (tools.run_command.sandbox).
const (
	// SandboxBwrap runs every command under bubblewrap: a read-only root of the host's
	// program directories and a few /etc files (rootArgs), the workspace writable, a private /tmp with an empty HOME in it, its own
	// process namespace (every descendant dies with the command) and no network unless
	// Config.Network. It is the default.
	SandboxBwrap = "bwrap"
	// SandboxNone runs commands directly, as the gateway's user: they can write anywhere
	// the gateway can and leave processes behind. Only an explicit setting chooses it.
	SandboxNone = "none"
)

// sandboxHome is the command's HOME inside the sandbox: a directory on the private /tmp,
// empty at every start, so a .gitconfig or .bashrc planted anywhere has no effect.
const sandboxHome = "/tmp/home"

// probeTimeout bounds the start-up check that bwrap can create a sandbox.
const probeTimeout = 10 * time.Second

// sandbox is how run_command wraps a command in bwrap.
type sandbox struct {
	bwrap   string // the bwrap executable
	prlimit string // the prlimit executable, which sets Limits; "" in the start-up probe
	limits  Limits
	network bool
	hidden  []string // plangate's own files, emptied for commands (Config.Hidden)
	protect bool     // bind the plan's workspace copy read-only (Config.ProtectPlanCopy)
}

// systemDirs are the host's program directories a command sees, read-only. On a merged
// /usr (Debian, Ubuntu, Fedora) /bin, /lib* and /sbin are symlinks into /usr: the sandbox
// makes the same links.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the files of /etc a command sees, read-only, where the host has them; the
// public TLS certificates only, not /etc/ssl/private. The rest of /etc (credentials,
// private keys, service configuration, plangate's own config) is absent.
var etcFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf",
	"/etc/nsswitch.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki/tls/certs", "/etc/pki/ca-trust",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
	"/etc/magic", "/etc/magic.mime", "/etc/os-release", "/etc/debian_version",
	"/etc/python3", "/etc/perl", "/etc/inputrc",
}

// procCovered are the parts of /proc through which a process changes the kernel, not
// itself.
var procCovered = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// rootArgs build the command's root file system from parts on an empty tmpfs: the
// program directories and selected /etc files, read-only. Nothing else of the host is
// there: not /run, /var, /home, /root, /srv, /mnt, the host's /tmp nor any other
// directory, so a command reaches no unix socket of the host (PostgreSQL's, Docker's,
// D-Bus) and no other session's workspace.
func rootArgs() []string {
	var a []string
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	return a
}

// args is bwrap's command line for running exe with args in the workspace ws (an
// absolute path). The order matters: later mounts cover earlier ones, so the workspace is
// bound last and stays visible even when it lies under /tmp. Only the workspace itself is
// bound: bwrap creates its parent directories, empty, on the sandbox's root.
func (s *sandbox) args(ws, exe string, args []string) []string {
	hideBefore, hideAfter := hideArgs(ws, s.hidden)
	a := append(rootArgs(), "--dev", "/dev", "--proc", "/proc")
	// The kernel's settings read-only, explicitly: bwrap covers these only where it finds
	// them writable, and a command running as uid 0 without capabilities can still write
	// root-owned sysctls (core_pattern would run a program on the host as root).
	for _, p := range procCovered {
		a = append(a, "--ro-bind-try", p, p)
	}
	// /dev/shm is a tmpfs bounded like /tmp; the rest of /dev (bwrap's own tmpfs, as
	// large as the host's memory) is read-only once it is set up.
	var size []string
	if s.limits.TmpSize > 0 {
		size = []string{"--size", strconv.FormatInt(s.limits.TmpSize, 10)}
	}
	a = append(append(a, size...), "--tmpfs", "/dev/shm", "--remount-ro", "/dev")
	a = append(append(a, size...), "--tmpfs", "/tmp", "--dir", sandboxHome)
	a = append(a, hideBefore...)
	a = append(a, "--bind", ws, ws)
	a = append(a, hideAfter...)
	if s.protect {
		a = append(a, protectArgs(ws)...)
	}
	a = append(a, gitArgs(ws)...)
	a = append(a,
		// The root's own tmpfs (where bwrap made the workspace's parents) read-only too:
		// writes outside the workspace and /tmp fail instead of vanishing.
		"--remount-ro", "/",
		"--chdir", ws,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent",
		// A new session: the command cannot reach the gateway's terminal (TIOCSTI).
		"--new-session",
		// Even when the gateway runs as root, the command gets no capabilities, so it
		// cannot remount its read-only parts.
		"--cap-drop", "ALL",
	)
	if !s.network {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--info-fd", "3", "--seccomp", "4", "--")
	if s.prlimit != "" {
		a = append(a, s.limits.prlimitArgs(s.prlimit)...)
	}
	a = append(a, exe)
	return append(a, args...)
}

// setUpSandbox checks at start-up that commands can run as configured. A sandbox that
// cannot start makes run_command unavailable rather than silently unsandboxed.
func (t *Toolbox) setUpSandbox() {
	switch t.cfg.Sandbox {
	case "", SandboxBwrap:
		sb, err := newSandbox(t.cfg.Bwrap, t.cfg.Network)
		if err != nil {
			t.runUnavailable = fmt.Sprintf("run_command is unavailable: %v; install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap), or set tools.run_command.sandbox: none to run commands without a sandbox", err)
			t.notices = append(t.notices, t.runUnavailable)
			return
		}
		prlimit, err := resolveProgram("prlimit", sandboxPath(commandPath()), true)
		if err != nil {
			t.runUnavailable = "run_command is unavailable: prlimit, which sets the commands' limits, is not installed; install util-linux (Debian, Ubuntu: apt-get install util-linux), or set tools.run_command.sandbox: none to run commands without a sandbox"
			t.notices = append(t.notices, t.runUnavailable)
			return
		}
		if !canCountProcs() {
			t.notices = append(t.notices, "tools.run_command.limits.processes cannot be enforced on this host: its kernel does not list a process's children in /proc (CONFIG_PROC_CHILDREN); the other limits apply")
		}
		t.sandbox = &sandbox{bwrap: sb.bwrap, prlimit: prlimit, limits: t.cfg.Limits, network: sb.network, hidden: t.cfg.Hidden, protect: t.cfg.ProtectPlanCopy}
	case SandboxNone:
		t.notices = append(t.notices, "run_command runs commands without a sandbox (tools.run_command.sandbox: none): a command can change files outside the workspace, use the network and leave processes running")
	default:
		t.runUnavailable = "run_command is unavailable: " + errUnknownSandbox.Error()
		t.notices = append(t.notices, t.runUnavailable)
	}
}

// CheckSandbox reports why bwrap (empty: from PATH) cannot start a sandbox on this host,
// or nil when it can.
func CheckSandbox(bwrap string, network bool) error {
	_, err := newSandbox(bwrap, network)
	return err
}

// probeCache remembers per bwrap path and network setting whether a sandbox can start
// (the probe's error, or nil), so building many toolboxes (tests, reloads) runs the check
// once per process.
var probeCache sync.Map

// newSandbox finds bwrap and checks that it can start a sandbox on this host (user
// namespaces may be disabled, or bwrap missing). The error is one line for the operator.
func newSandbox(bwrap string, network bool) (*sandbox, error) {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed", bwrap)
	}
	// The probe bounds its /tmp as commands do: bwrap before 0.8 lacks --size.
	s := &sandbox{bwrap: path, network: network, limits: Limits{TmpSize: DefaultLimits.TmpSize}}
	key := struct {
		bwrap   string
		network bool
	}{path, network}
	v, ok := probeCache.Load(key)
	if !ok {
		v, _ = probeCache.LoadOrStore(key, s.probe())
	}
	if err, _ := v.(error); err != nil {
		return nil, err
	}
	return s, nil
}

// probe runs true in a sandbox like a command's.
func (s *sandbox) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	ws, err := os.MkdirTemp("", "plangate-probe-")
	if err != nil {
		return fmt.Errorf("checking the sandbox: %w", err)
	}
	defer os.Remove(ws)
	args := s.args(ws, "true", nil)
	// No info pipe in the probe: drop "--info-fd 3" (the seccomp filter stays, on fd 4).
	for i := range args {
		if args[i] == "--info-fd" {
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	filter, err := seccompPipe()
	if err != nil {
		return fmt.Errorf("checking the sandbox: %w", err)
	}
	defer filter.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.ExtraFiles = []*os.File{nil, filter}
	cmd.Stderr = &stderr
	cmd.Env = commandEnv(sandboxHome, sandboxPath(commandPath()))
	if err := cmd.Run(); err != nil {
		why, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if why = strings.TrimSpace(why); why == "" {
			why = err.Error()
		}
		if strings.Contains(why, "--size") {
			why += " (bubblewrap 0.8 or later is needed: its --size bounds a command's /tmp)"
		}
		return fmt.Errorf("bwrap cannot start a sandbox on this host: %s", why)
	}
	return nil
}

// errUnknownSandbox is returned for a sandbox mode other than bwrap or none; the
// configuration check refuses those before.
var errUnknownSandbox = errors.New(`tools.run_command.sandbox must be "bwrap" or "none"`)
