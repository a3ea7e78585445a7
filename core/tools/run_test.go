package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// need skips the test unless every program is installed.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true (.ci/run installs it)", p)
			}
			t.Skipf("%s is not installed", p)
		}
	}
}

func TestRunCommandDisabled(t *testing.T) {
	tb := New(Config{Allow: []string{"echo"}}) // listed, but the tool is off
	for _, s := range tb.Tools() {
		if s.Name == ToolRunCommand {
			t.Fatal("run_command is offered while disabled")
		}
	}
	ws := testWS(t, nil)
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"echo", "hi"}})
	wantErr(t, err, "run_command is disabled", "tools.run_command.enabled")

	on := newRun(t, Config{RunCommand: true, Allow: []string{"echo", "ls"}})
	i := slices.IndexFunc(on.Tools(), func(s core.ToolSpec) bool { return s.Name == ToolRunCommand })
	if i < 0 {
		t.Fatal("run_command is not offered while enabled")
	}
	spec := on.Tools()[i]
	if spec.Kind != core.ToolMutating {
		t.Errorf("run_command kind %q, want mutating: a command can change anything", spec.Kind)
	}
	wantContains(t, "description", spec.Description, "(echo, ls)")
}

func TestRunCommandRefusals(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "x\n"})
	echo := newRun(t, Config{RunCommand: true, Allow: []string{"echo"}})
	cases := []struct {
		name string
		tb   *Toolbox
		argv []string
		want []string
	}{
		{"empty allowlist", newRun(t, Config{RunCommand: true}), []string{"echo", "hi"}, []string{"none are listed in tools.run_command.allow"}},
		{"not listed", echo, []string{"rm", "README.md"}, []string{`"rm" is not an allowed program (allowed: echo)`}},
		{"env wrapper", echo, []string{"env", "echo", "hi"}, []string{`"env" is not an allowed program`, "wrappers such as env"}},
		{"env with assignment", echo, []string{"env", "X=1", "rm", "README.md"}, []string{`"env" is not an allowed program`}},
		{"shell", echo, []string{"sh", "-c", "echo hi"}, []string{`"sh" is not an allowed program`}},
		{"absolute path to a listed name", echo, []string{"/bin/echo", "hi"}, []string{"exact path is listed"}},
		{"dot-dot path to a listed name", echo, []string{"./../echo"}, []string{"exact path is listed"}},
		{"workspace copy of a listed name", echo, []string{"./echo"}, []string{"exact path is listed"}},
		{"different case", echo, []string{"ECHO", "hi"}, []string{`"ECHO" is not an allowed program`}},
		{"command line in one string", echo, []string{"echo hi"}, []string{"separate array elements"}},
		{"no argv", echo, nil, []string{"argv is required"}},
		{"empty program", echo, []string{""}, []string{"argv is required"}},
		{"NUL", echo, []string{"echo", "a\x00b"}, []string{"NUL"}},
		{"negative timeout", echo, []string{"echo"}, []string{"timeout_seconds must be positive"}},
		{"listed but missing", newRun(t, Config{RunCommand: true, Allow: []string{"no-such-program-plangate"}}),
			[]string{"no-such-program-plangate"}, []string{"not installed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"argv": c.argv}
			if c.name == "negative timeout" {
				need(t, "echo")
				args["timeout_seconds"] = -1
			}
			_, err := call(t, c.tb, ws, ToolRunCommand, args)
			wantErr(t, err, c.want...)
			if got := readBack(t, ws, "README.md"); got != "x\n" {
				t.Errorf("README.md changed by a refused command: %q", got)
			}
		})
	}
}

func TestRunCommandSuccess(t *testing.T) {
	need(t, "echo", "ls", "pwd")
	ws := testWS(t, map[string]string{"README.md": "x\n", "docs/guide.md": ""})
	tb := newRun(t, Config{RunCommand: true, Allow: []string{"echo", "ls", "pwd"}})
	cases := []struct {
		name string
		argv []string
		want string
	}{
		{"echo", []string{"echo", "hello", "two words"}, "$ echo hello \"two words\"\nexit code: 0\nhello two words\n"},
		{"no shell expansion", []string{"echo", "$HOME", "*"}, "$ echo \"$HOME\" \"*\"\nexit code: 0\n$HOME *\n"},
		{"working directory is the workspace", []string{"ls"}, "$ ls\nexit code: 0\nREADME.md\ndocs\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": c.argv})
			if err != nil {
				t.Fatal(err)
			}
			if out != c.want {
				t.Fatalf("output\n%q\nwant\n%q", out, c.want)
			}
		})
	}
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"pwd"}})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(ws.Dir)
	real, _ := filepath.EvalSymlinks(abs)
	if got := strings.TrimSpace(strings.TrimPrefix(out, "$ pwd\nexit code: 0\n")); got != abs && got != real {
		t.Errorf("pwd = %q, want the workspace %q", got, abs)
	}
}

func TestRunCommandExitCodeAndNoOutput(t *testing.T) {
	need(t, "false", "true")
	ws := testWS(t, nil)
	tb := newRun(t, Config{RunCommand: true, Allow: []string{"false", "true"}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"false"}})
	if err != nil {
		t.Fatalf("a failing command is a result, not a tool error: %v", err)
	}
	if out != "$ false\nexit code: 1\n(no output)\n" {
		t.Errorf("output %q", out)
	}
	out, err = call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"true"}})
	if err != nil || out != "$ true\nexit code: 0\n(no output)\n" {
		t.Errorf("output %q, %v", out, err)
	}
}

func TestRunCommandEnvironment(t *testing.T) {
	need(t, "env")
	t.Setenv("PLANGATE_TEST_SECRET", "sk-not-for-commands")
	ws := testWS(t, nil)
	abs, _ := filepath.Abs(ws.Dir)
	cases := []struct {
		sandbox string
		home    string
		names   []string
	}{
		{SandboxNone, abs, []string{"HOME", "LANG", "PATH"}},
		// bwrap adds PWD, the workspace.
		{SandboxBwrap, sandboxHome, []string{"HOME", "LANG", "PATH", "PWD"}},
	}
	for _, c := range cases {
		t.Run(c.sandbox, func(t *testing.T) {
			if c.sandbox == SandboxBwrap {
				needSandbox(t)
			}
			tb := New(Config{RunCommand: true, Allow: []string{"env"}, Sandbox: c.sandbox})
			out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"env"}})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "sk-not-for-commands") {
				t.Errorf("the gateway's environment leaked into the command:\n%s", out)
			}
			wantContains(t, "env output", out, "HOME="+c.home+"\n", "PATH=/", "LANG=")
			var names []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n")[2:] {
				name, _, _ := strings.Cut(l, "=")
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, c.names) {
				t.Errorf("environment has %v, want only %v", names, c.names)
			}
		})
	}
}

func TestRunCommandRelativeProgram(t *testing.T) {
	need(t, "sh")
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts")
	}
	ws := testWS(t, map[string]string{"check.sh": "#!/bin/sh\necho checked \"$1\"\n"})
	if err := os.Chmod(filepath.Join(ws.Dir, "check.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := newRun(t, Config{RunCommand: true, Allow: []string{"./check.sh"}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"./check.sh", "docs"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 0\nchecked docs\n")
}

func TestRunCommandTimeout(t *testing.T) {
	need(t, "sleep")
	ws := testWS(t, nil)
	// The model asks for 1s within a 60s limit; and asks for 100s where only 1s is allowed.
	cases := []struct {
		name    string
		limit   time.Duration
		seconds int
	}{
		{"model asks for less", time.Minute, 1},
		{"model asks for more than the cap", time.Second, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newRun(t, Config{RunCommand: true, Allow: []string{"sleep"}, CommandTimeout: c.limit})
			_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sleep", "30"}, "timeout_seconds": c.seconds})
			wantErr(t, err, "sleep 30 timed out after 1s and was killed")
		})
	}
}

func TestRunCommandTimeoutKillsProcessGroup(t *testing.T) {
	need(t, "sh", "sleep")
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ws := testWS(t, nil)
	// Without the sandbox, the process group is what stops the children (the pids are
	// the host's); TestSandboxTimeoutKillsEverything covers the sandbox.
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, CommandTimeout: time.Second, Sandbox: SandboxNone})
	// The shell starts a grandchild, records its pid, and waits: the timeout must kill both.
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "sleep 60 & echo $! > child.pid; wait"}})
	wantErr(t, err, "timed out", "killed with its child processes")
	pid, perr := strconv.Atoi(strings.TrimSpace(readBack(t, ws, "child.pid")))
	if perr != nil {
		t.Fatal(perr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d is still running after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie waiting to be reaped counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestRunCommandOutputCap(t *testing.T) {
	need(t, "seq")
	ws := testWS(t, nil)
	tb := newRun(t, Config{RunCommand: true, Allow: []string{"seq"}, MaxOutput: 100})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"seq", "1", "5000"}})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(out, "$ seq 1 5000\nexit code: 0\n")
	if !strings.HasPrefix(body, "1\n2\n3\n") || !strings.HasSuffix(body, "4999\n5000\n") {
		t.Errorf("capped output should keep the start and the end:\n%s", body)
	}
	wantContains(t, "output", body, "bytes of output omitted; 23893 in total")
	if len(body) > 200 {
		t.Errorf("capped output is %d bytes", len(body))
	}
}

func TestCappedBuffer(t *testing.T) {
	cases := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef\n"},
		{"exactly", 6, []string{"abcdef"}, "abcdef\n"},
		{"head and tail", 6, []string{"abcdefghij"}, "abc\n… (4 bytes of output omitted; 10 in total) …\nhij\n"},
		{"many small writes", 4, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "12\n… (5 bytes of output omitted; 9 in total) …\n89\n"},
		{"nothing", 4, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newCappedBuffer(c.limit)
			for _, w := range c.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
		})
	}
}
