//go:build linux

package tools

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// The sandbox tests run real commands under bwrap and assert on the disk and on /proc.

// hostDir is a directory outside /tmp (the sandbox gives commands a private /tmp, which
// would hide a write there without refusing it): a temporary directory next to the test.
// When the checkout itself lies under /tmp (CI may clone there), the user's cache
// directory is used instead.
func hostDir(t *testing.T) string {
	t.Helper()
	parent, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if underTmp(parent) {
		cache, err := os.UserCacheDir()
		if err != nil || underTmp(cache) {
			t.Fatalf("no directory outside /tmp for the sandbox tests (cache dir %q: %v)", cache, err)
		}
		parent = cache
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(parent, ".sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func underTmp(p string) bool {
	rel, err := filepath.Rel("/tmp", p)
	return err == nil && filepath.IsLocal(rel)
}

func mustNotExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the host after the command (%v)", p, err)
	}
}

func TestSandboxConfinesWrites(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "touch")
	base := hostDir(t)
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	writeTree(t, ws.Dir, map[string]string{"README.md": "x\n"})
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpOutside := t.TempDir() // under /tmp on the host
	tb := New(Config{RunCommand: true, Allow: []string{"touch", "sh"}})

	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"touch", "../x"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "touch ../x", out, "exit code: 1", "Read-only file system")
	mustNotExist(t, filepath.Join(base, "x"))

	victim := filepath.Join(outside, "victim.txt")
	if err := os.WriteFile(victim, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Files outside the workspace are not in the sandbox at all: neither a hard link
	// nor a symlink reaches them.
	script := fmt.Sprintf("touch %s/a; touch %s/b; touch /c; echo x > $HOME/.profile; "+
		"ln %s hard; echo pwned >> hard; ln -s %s soft; echo pwned >> soft; touch inside; echo done",
		outside, tmpOutside, victim, victim)
	out, err = call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "sh", out, "done")
	mustNotExist(t, filepath.Join(outside, "a"))
	mustNotExist(t, filepath.Join(tmpOutside, "b")) // written to the private /tmp, gone
	mustNotExist(t, "/c")
	wantFile(t, victim, "original\n")
	wantContains(t, "sh", out, "No such file or directory", "Read-only file system")
	if _, err := os.Stat(filepath.Join(ws.Dir, "inside")); err != nil {
		t.Errorf("a write inside the workspace did not reach the disk: %v", err)
	}
}

// TestSandboxIgnoresPlantedHome: HOME is not the workspace, so a .gitconfig the agent
// writes there does not run its aliases and hooks with the next git call.
func TestSandboxIgnoresPlantedHome(t *testing.T) {
	needSandbox(t)
	need(t, "git")
	base := hostDir(t)
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	pwned := filepath.Join(base, "pwned")
	writeTree(t, ws.Dir, map[string]string{
		".gitconfig": "[user]\n\tname = Planted\n[alias]\n\tst = !touch " + pwned + " && touch pwned-inside\n",
	})
	tb := New(Config{RunCommand: true, Allow: []string{"git"}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"git", "st"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "git st", out, "is not a git command")
	mustNotExist(t, pwned)
	mustNotExist(t, filepath.Join(ws.Dir, "pwned-inside"))
	out, err = call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"git", "config", "--global", "user.name"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Planted") {
		t.Errorf("git read the planted .gitconfig:\n%s", out)
	}
}

func TestSandboxNetwork(t *testing.T) {
	needSandbox(t)
	need(t, "bash")
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			ws := testWS(t, nil)
			tb := New(Config{RunCommand: true, Allow: []string{"bash"}, Network: network})
			script := fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d && echo connected", port)
			out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"bash", "-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			// A connection the command made is queued before a sentinel the test makes
			// now: the first connection accepted tells which came first.
			sentinel, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer sentinel.Close()
			_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second)) // a safety net only
			first, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			first.Close()
			fromCommand := first.RemoteAddr().String() != sentinel.LocalAddr().String()
			if network {
				if !fromCommand || !strings.HasSuffix(out, "\nconnected\n") {
					t.Errorf("with network: true the command could not connect:\n%s", out)
				}
				return
			}
			if fromCommand || strings.HasSuffix(out, "\nconnected\n") {
				t.Errorf("the command reached the host's network:\n%s", out)
			}
			wantContains(t, "output", out, "Connection refused")
		})
	}
}

// marker is an argument for sleep that no other process on the host has.
func marker() string {
	return fmt.Sprintf("%d.%06d", 5000+rand.IntN(1000), rand.IntN(1000000))
}

// procsWith lists the host pids whose command line contains arg.
func procsWith(t *testing.T, arg string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // not a process, gone, or a zombie
		}
		if slices.ContainsFunc(bytes.Split(b, []byte{0}), func(a []byte) bool { return string(a) == arg }) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestProcsWith keeps the /proc check below falsifiable: it does find a live process.
func TestProcsWith(t *testing.T) {
	need(t, "sleep")
	m := marker()
	cmd := exec.Command("sleep", m)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if pids := procsWith(t, m); len(pids) != 1 {
		t.Fatalf("procsWith(%s) = %v, want the one sleep", m, pids)
	}
}

func TestSandboxOrphansDieWithTheCommand(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "sleep", "setsid")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}})
	bg, detached, nohup := marker(), marker(), marker()
	script := fmt.Sprintf("sleep %s & setsid sleep %s & (trap '' HUP; sleep %s) & echo started", bg, detached, nohup)
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 0", "started")
	for _, m := range []string{bg, detached, nohup} {
		if pids := procsWith(t, m); len(pids) > 0 {
			t.Errorf("sleep %s still runs after the command ended (pids %v)", m, pids)
		}
	}
}

func TestSandboxTimeoutKillsEverything(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "sleep", "setsid")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, CommandTimeout: time.Second})
	bg, detached, fg := marker(), marker(), marker()
	script := fmt.Sprintf("sleep %s & setsid sleep %s & echo forked > forked; sleep %s", bg, detached, fg)
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
	wantErr(t, err, "timed out after 1s", "killed with its child processes")
	if got := readBack(t, ws, "forked"); got != "forked\n" {
		t.Fatalf("the command did not start its children: %q", got)
	}
	for _, m := range []string{bg, detached, fg} {
		if pids := procsWith(t, m); len(pids) > 0 {
			t.Errorf("sleep %s survived the timeout (pids %v)", m, pids)
		}
	}
}

func TestSandboxUnavailable(t *testing.T) {
	need(t, "sh")
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(old, []byte("#!/bin/sh\ncase \"$*\" in *--size*) echo 'bwrap: Unknown option --size' >&2; exit 1;; esac\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"older than 0.8", Config{Bwrap: old}, "bwrap: Unknown option --size (bubblewrap 0.8 or later is needed"},
		{"missing", Config{Bwrap: filepath.Join(t.TempDir(), "no-bwrap")}, "is not installed"},
		{"cannot start", Config{Bwrap: fake}, "bwrap cannot start a sandbox on this host: bwrap: No permissions to create new namespace"},
		{"unknown mode", Config{Sandbox: "docker"}, `tools.run_command.sandbox must be "bwrap" or "none"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.RunCommand, c.cfg.Allow = true, []string{"sh"}
			tb := New(c.cfg)
			for _, s := range tb.Tools() {
				if s.Name == ToolRunCommand {
					t.Error("run_command is offered without its sandbox")
				}
			}
			notes := tb.Notices()
			if len(notes) != 1 || strings.Contains(notes[0], "\n") {
				t.Fatalf("notices %q, want one line", notes)
			}
			wantContains(t, "notice", notes[0], "run_command is unavailable: ", c.want)
			ws := testWS(t, nil)
			_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "touch ran"}})
			wantErr(t, err, "run_command is unavailable")
			mustNotExist(t, filepath.Join(ws.Dir, "ran"))
			_, err = tb.WritePaths(ToolRunCommand, []byte(`{"argv":["sh"]}`))
			wantErr(t, err, "run_command is unavailable")
		})
	}
}

func TestSandboxNoneWarns(t *testing.T) {
	need(t, "touch")
	tb := New(Config{RunCommand: true, Allow: []string{"touch"}, Sandbox: SandboxNone, Bwrap: "/no/such/bwrap"})
	notes := tb.Notices()
	if len(notes) != 1 || !strings.Contains(notes[0], "without a sandbox (tools.run_command.sandbox: none)") {
		t.Fatalf("notices %q, want the warning", notes)
	}
	ws := testWS(t, nil)
	if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"touch", "ran"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir, "ran")); err != nil {
		t.Errorf("the unsandboxed command did not run: %v", err)
	}
	if n := New(Config{Allow: []string{"touch"}}).Notices(); len(n) != 0 {
		t.Errorf("notices with run_command off: %q", n)
	}
}

func TestSandboxArgs(t *testing.T) {
	s := &sandbox{bwrap: "/usr/bin/bwrap"}
	got := strings.Join(s.args("/srv/ws", "/usr/bin/go", []string{"test", "./..."}), " ")
	for _, want := range []string{
		"--ro-bind /usr /usr", "--ro-bind-try /etc/passwd /etc/passwd",
		"--dev /dev --proc /proc --ro-bind-try /proc/sys /proc/sys",
		"--tmpfs /dev/shm --remount-ro /dev --tmpfs /tmp --dir /tmp/home --bind /srv/ws /srv/ws --remount-ro / --chdir /srv/ws",
		"--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop ALL", "--unshare-net", "--info-fd 3 --seccomp 4 --",
		"-- /usr/bin/go test ./...",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "--ro-bind / /") || strings.Contains(got, " /run") || strings.Contains(got, " /home") || strings.Contains(got, " /var") {
		t.Errorf("args %q show more of the host than the program directories and /etc files", got)
	}
	s.prlimit, s.limits = "/usr/bin/prlimit", DefaultLimits
	got = strings.Join(s.args("/srv/ws", "/usr/bin/go", []string{"test"}), " ")
	for _, want := range []string{
		"--size 536870912 --tmpfs /tmp",
		"-- /usr/bin/prlimit --as=4294967296 --cpu=300:301 --fsize=1073741824 -- /usr/bin/go test",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	s.network = true
	if got := strings.Join(s.args("/srv/ws", "/usr/bin/go", nil), " "); strings.Contains(got, "--unshare-net") {
		t.Errorf("network: true still unshares the network: %q", got)
	}
}

// TestSandboxHidesPlangateFiles: a command can read the host's files, but not plangate's
// database, plans and configuration, even when the workspace lies under their directory.
func TestSandboxHidesPlangateFiles(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "cat", "ls")
	base := hostDir(t)
	writeTree(t, base, map[string]string{"plangate.db": "db secret\n", "plans/s1/plan.md": "plan secret\n", "config.yaml": "token: secret\n", "ws/README.md": "hello\n"})
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	tb := New(Config{RunCommand: true, Allow: []string{"sh"},
		Hidden: []string{filepath.Join(base, "plangate.db"), filepath.Join(base, "plans"), filepath.Join(base, "config.yaml"), filepath.Join(base, "plangate.db-wal")}})
	script := fmt.Sprintf("cat README.md %[1]s/plangate.db %[1]s/config.yaml; ls %[1]s/plans; echo x > %[1]s/plangate.db; echo end", base)
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "hello\n", "end\n")
	if strings.Contains(out, "secret") || strings.Contains(out, "s1") {
		t.Errorf("the command saw plangate's files:\n%s", out)
	}
	wantFile(t, filepath.Join(base, "plangate.db"), "db secret\n")
}
