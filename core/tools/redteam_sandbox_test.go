//go:build linux

package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The red team's attacks on run_command's sandbox and .git guard. An attack that still
// gets through is a test skipped with the reason; the others must pass.

// plantGitDir is a script that makes evil/ a git directory whose config names a
// core.fsmonitor: any git status that reads it on the host touches pwned-fsmonitor.
const plantGitDir = `mkdir -p evil/hooks evil/refs evil/objects && echo 'ref: refs/heads/main' > evil/HEAD && ` +
	`printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch pwned-fsmonitor; false"\n' > evil/config && `

// personGitStatus runs git status on the host in dir, as the person would after the
// command, without the user's or the system's config. Its failure does not matter: only
// what it ran does.
func personGitStatus(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("git", "status", "--short")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	_ = cmd.Run()
}

// TestRedTeamGitCommondir: .git/commondir is not guarded. A command writes it (the .git
// directory itself stays writable so git can commit), pointing git at a directory of its
// own whose config and hooks then apply to the repository: the person's next git status
// on the host runs the planted core.fsmonitor.
func TestRedTeamGitCommondir(t *testing.T) {
	need(t, "sh", "git", "mkdir", "printf")
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws, _ := gitRepo(t)
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", plantGitDir + "echo ../evil > .git/commondir"}}); err != nil {
			t.Fatal(err)
		}
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
	})
}

// TestRedTeamGitFileCreated: in a workspace without .git, a command writes .git as a file
// ("gitdir: evil"). The guard sees .git/config change, says it was put back, but its
// put-back fails on the file, which stays: the person's next git status runs the planted
// core.fsmonitor.
func TestRedTeamGitFileCreated(t *testing.T) {
	need(t, "sh", "git", "mkdir", "printf")
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws := testWS(t, map[string]string{"README.md": "hello\n"})
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", plantGitDir + "echo 'gitdir: evil' > .git"}}); err != nil {
			t.Fatal(err)
		}
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
		mustNotExist(t, filepath.Join(ws.Dir, ".git"))
	})
}

// TestRedTeamGitFileRewritten: a workspace whose .git is a file (a linked worktree, or a
// repository with a separate git directory) gets no read-only binds and its snapshot
// records .git/config only as "irregular", before and after alike: a command that
// rewrites the pointer changes nothing the guard compares, and nothing is put back.
func TestRedTeamGitFileRewritten(t *testing.T) {
	need(t, "sh", "git", "mkdir", "printf")
	bothSandboxes(t, func(t *testing.T, mode string) {
		// A worktree of a repository outside the workspace, as git worktree add makes it.
		main, _ := gitRepo(t)
		wsDir := filepath.Join(t.TempDir(), "ws")
		hostGit(t, main.Dir, "worktree", "add", "-q", wsDir)
		pointer, err := os.ReadFile(filepath.Join(wsDir, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		ws := main
		ws.Dir = wsDir
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", plantGitDir + "echo 'gitdir: evil' > .git"}}); err != nil {
			t.Fatal(err)
		}
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
		wantFile(t, filepath.Join(ws.Dir, ".git"), string(pointer))
	})
}

// TestRedTeamGitDirReplaced: a command that moves .git aside and makes a new one with
// its own config gets the guarded parts put back; the person's git status runs nothing.
func TestRedTeamGitDirReplaced(t *testing.T) {
	need(t, "sh", "git", "mkdir", "printf", "mv", "cp")
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws, config := gitRepo(t)
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", plantGitDir +
			"mv .git .git-old && mkdir .git && cp -r .git-old/HEAD .git-old/objects .git-old/refs .git/ && cp evil/config .git/config && echo moved"}})
		if err != nil {
			t.Fatal(err)
		}
		wantContains(t, "output", out, "moved\n", "put back")
		wantFile(t, filepath.Join(ws.Dir, ".git/config"), config)
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
	})
}

// TestRedTeamDevShmUnbounded: the sandbox's /dev is bwrap's own tmpfs, writable and
// without a size, so /dev/shm (or /dev itself) holds as much as the host's memory while
// /tmp is capped by tools.run_command.limits.tmp_size.
func TestRedTeamDevShmUnbounded(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "head", "wc")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Limits: Limits{TmpSize: 32 << 20}})
	if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c",
		"head -c 67108864 /dev/zero > /dev/shm/big; wc -c < /dev/shm/big > size"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readBack(t, ws, "size")); got == "67108864" {
		t.Errorf("/dev/shm took all 64 MiB with tmp_size 32 MiB (size %s)", got)
	}
}

// TestRedTeamStderrFlood: output written only to stderr counts against the output limit
// as stdout does, and the command is stopped.
func TestRedTeamStderrFlood(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "head")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, CommandTimeout: 10 * time.Second, Limits: Limits{Output: 1 << 20}})
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "head -c 33554432 /dev/zero >&2; echo after > after"}})
	wantErr(t, err, "was stopped: it wrote more than 1 MiB of output (the limit tools.run_command.limits.output)")
	mustNotExist(t, filepath.Join(ws.Dir, "after"))
}

// TestRedTeamProcSysWritableAsRoot: when the gateway runs as root (containers, CI), a
// command runs as uid 0 without capabilities, and the sysctl files check only the uid:
// bwrap's cover of /proc/sys is skipped because, without CAP_DAC_OVERRIDE, the directory
// itself is not writable. A command then can write host-wide settings such as
// kernel.core_pattern or kernel.modprobe, which the host's kernel runs as root outside
// the sandbox. The test writes nothing global: it checks access (the kernel's own sysctl
// permission check) and writes the hostname, which is the sandbox's own (--unshare-uts).
func TestRedTeamProcSysWritableAsRoot(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "cat")
	if os.Geteuid() != 0 {
		t.Skip("the sysctl files are writable by uid 0 only: run as root to try this")
	}
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}})
	script := `for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sys/vm/drop_caches /proc/sysrq-trigger; do ` +
		`[ -w "$f" ] && echo "$f" >> writable; done; echo redteam-sandbox > /proc/sys/kernel/hostname; cat /proc/sys/kernel/hostname > hostname; echo end`
	if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir, "writable")); err == nil {
		t.Errorf("a command may write host-wide kernel settings:\n%s", b)
	}
	if got := strings.TrimSpace(readBack(t, ws, "hostname")); got == "redteam-sandbox" {
		t.Errorf("a command wrote through /proc/sys (its own hostname is now %q)", got)
	}
}

// TestRedTeamEtcSSLPrivate: /etc/ssl is bound whole, so /etc/ssl/private (the host's TLS
// private keys, a reverse proxy's among them) is in the sandbox too; whatever of it the
// gateway's user can read (all of it as root, or in the ssl-cert group), a command reads.
func TestRedTeamEtcSSLPrivate(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "cat")
	keys, _ := filepath.Glob("/etc/ssl/private/*")
	var readable string
	for _, k := range keys {
		if f, err := os.Open(k); err == nil {
			f.Close()
			readable = k
			break
		}
	}
	if readable == "" {
		t.Skip("no file under /etc/ssl/private is readable by this user")
	}
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}})
	if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "cat " + readable + " > stolen; echo end"}}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir, "stolen")); err == nil && len(b) > 0 {
		t.Errorf("a command copied %s (%d bytes) into the workspace", readable, len(b))
	}
}

// TestRedTeamGitLinkedWorktreeCommondir: the workspace's repository has a linked
// worktree outside the workspace (git worktree add ../other). Its administrative files,
// .git/worktrees/other/, are in the workspace and unguarded: a command repoints its
// commondir to a directory of its own, and the person's next git status in ../other,
// outside the workspace, runs the planted core.fsmonitor there.
func TestRedTeamGitLinkedWorktreeCommondir(t *testing.T) {
	need(t, "sh", "git", "mkdir", "printf")
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws, _ := gitRepo(t)
		other := filepath.Join(t.TempDir(), "other")
		hostGit(t, ws.Dir, "worktree", "add", "-q", other)
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		script := plantGitDir + "echo " + filepath.Join(ws.Dir, "evil") + " > .git/worktrees/other/commondir"
		if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}}); err != nil {
			t.Fatal(err)
		}
		personGitStatus(t, other)
		mustNotExist(t, filepath.Join(other, "pwned-fsmonitor"))
	})
}

// TestRedTeamThreadsEscapeProcessLimit: limits.processes counts processes, not threads,
// while the host's pid space (kernel.pid_max, often 32768) counts both: one process of a
// command starts hundreds of threads, far over the limit, and is not stopped; with the
// default memory limit one process can hold tens of thousands, enough to leave the host
// (the gateway included) unable to start anything until the command times out.
func TestRedTeamThreadsEscapeProcessLimit(t *testing.T) {
	needSandbox(t)
	need(t, "python3")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"python3"}, CommandTimeout: 20 * time.Second, Limits: Limits{Processes: 16}})
	script := "import threading, os, time\nthreading.stack_size(65536)\nev = threading.Event()\n" +
		"ts = [threading.Thread(target=ev.wait, args=(10,)) for _ in range(200)]\n[x.start() for x in ts]\n" +
		"time.sleep(0.5)\nopen('tasks', 'w').write(str(len(os.listdir('/proc/self/task'))))\nev.set()\n"
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"python3", "-c", script}})
	if b, rerr := os.ReadFile(filepath.Join(ws.Dir, "tasks")); rerr == nil {
		t.Errorf("one process of the command ran %s tasks at once under limits.processes 16 (result error: %v)", b, err)
	}
}

// keyScript is python that stores (op "add") or reads into the file key (op "read") a
// "user" key named desc in the user keyring, by the raw add_key and keyctl system calls
// (x86_64 numbers), as any program in the sandbox could.
func keyScript(op, desc, secret string) string {
	return `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
desc = b"` + desc + `"
if "` + op + `" == "add":
    data = b"` + secret + `"
    print("add_key", libc.syscall(248, b"user", desc, data, len(data), ctypes.c_int(-4)))
else:
    kid = libc.syscall(250, 10, ctypes.c_int(-4), b"user", desc, 0)
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(250, 11, ctypes.c_long(kid), buf, 256)
    if n > 0:
        open("key", "wb").write(buf.raw[:n])
    print("read", kid, n)
`
}

// TestRedTeamKeyringCrossesSessions: the kernel's keyrings are not namespaced and the
// sandbox filters no system call, so a command stores a key in its uid's user keyring,
// where it outlives the sandbox; a command of another session (another workspace) reads
// it back: a channel between sessions, and the gateway user's own keys are readable the
// same way.
func TestRedTeamKeyringCrossesSessions(t *testing.T) {
	needSandbox(t)
	need(t, "python3")
	if runtime.GOARCH != "amd64" {
		t.Skip("the script uses x86_64 system call numbers")
	}
	desc, secret := "plangate-redteam-"+marker(), "secret-of-session-a"
	t.Cleanup(func() {
		if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0); err == nil {
			_, _ = unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		}
	})
	a, b := testWS(t, nil), testWS(t, nil)
	b.SessionID = "s2"
	tb := New(Config{RunCommand: true, Allow: []string{"python3"}})
	out, err := call(t, tb, a, ToolRunCommand, map[string]any{"argv": []string{"python3", "-c", keyScript("add", desc, secret)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "add_key -1") {
		t.Errorf("add_key in the sandbox did not fail: %s", out)
	}
	if _, err := call(t, tb, b, ToolRunCommand, map[string]any{"argv": []string{"python3", "-c", keyScript("read", desc, "")}}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b.Dir, "key")); err == nil {
		t.Errorf("session s2's command read %q, stored by session s1's command in the keyring", got)
	}
}

// TestRedTeamGitNestedRepositoryInIndex: the guard covers the workspace root's .git only,
// and the index stays writable so git can commit. A command makes a nested repository
// whose own config names a core.fsmonitor and adds it to the root's index as a gitlink:
// the person's next git status at the workspace root checks that submodule, running git
// inside it, and runs the planted command. No submodule had to exist before.
func TestRedTeamGitNestedRepositoryInIndex(t *testing.T) {
	need(t, "sh", "git", "mkdir")
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws, _ := gitRepo(t)
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		script := "set -e; mkdir sub; cd sub; git init -q; git -c user.name=a -c user.email=a@example.org commit -q --allow-empty -m x; " +
			"cd ..; git add sub 2>/dev/null; git -C sub config core.fsmonitor 'touch ../pwned-sub; false'; echo end"
		out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		wantContains(t, "output", out, "end\n")
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-sub")) // nothing ran it yet
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-sub"))
	})
}

// TestSubmoduleRepositoryGuarded: a submodule's repository lives under .git/modules, and
// git status at the root runs git inside it with its config. A command that sets
// core.fsmonitor there (or plants a hook) is refused under bwrap and put back without a
// sandbox: the person's git status runs nothing.
func TestSubmoduleRepositoryGuarded(t *testing.T) {
	need(t, "sh", "git")
	bothSandboxes(t, func(t *testing.T, mode string) {
		src := t.TempDir()
		hostGit(t, src, "init", "-q")
		writeTree(t, src, map[string]string{"lib.txt": "lib\n"})
		hostGit(t, src, "add", "lib.txt")
		hostGit(t, src, "commit", "-qm", "lib")
		ws, _ := gitRepo(t)
		hostGit(t, ws.Dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		hostGit(t, ws.Dir, "commit", "-qm", "sub")
		config := filepath.Join(ws.Dir, ".git/modules/sub/config")
		before, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: mode})
		if _, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c",
			`git -C sub config core.fsmonitor "touch $PWD/pwned-fsmonitor; false"; printf '#!/bin/sh\ntouch pwned-hook\n' > .git/modules/sub/hooks/pre-commit`}}); err != nil {
			t.Fatal(err)
		}
		if after, _ := os.ReadFile(config); string(after) != string(before) {
			t.Errorf("the submodule's config after the command:\n%s\nwant it as before:\n%s", after, before)
		}
		mustNotExist(t, filepath.Join(ws.Dir, ".git/modules/sub/hooks/pre-commit"))
		personGitStatus(t, ws.Dir)
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
	})
}
