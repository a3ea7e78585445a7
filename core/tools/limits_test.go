//go:build linux

package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The limit tests run real commands over a limit and assert on the disk and on /proc.
// A command over a limit is stopped at once; the timeouts below only bound how long the
// code before the limits took to fail them.

func TestLimitProcesses(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "sleep")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, CommandTimeout: 20 * time.Second, Limits: Limits{Processes: 128}})
	m := marker()
	script := fmt.Sprintf("i=0; while [ $i -lt 200 ]; do sleep %s & i=$((i+1)); done; wait", m)
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
	wantErr(t, err, "was stopped: it ran more than 128 processes or threads at once", "tools.run_command.limits.processes")
	if pids := procsWith(t, m); len(pids) > 0 {
		t.Errorf("%d sleeps outlived the process limit", len(pids))
	}
	// Under the limit nothing is stopped.
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1 & done; wait; echo ok"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 0", "ok\n")
}

func TestLimitTmpSize(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "head", "wc")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Limits: Limits{TmpSize: 32 << 20}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c",
		"head -c 67108864 /dev/zero > /tmp/big; r=$?; wc -c < /tmp/big > size; exit $r"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 1", "No space left on device", "it holds at most 32 MiB (tools.run_command.limits.tmp_size)")
	if got := strings.TrimSpace(readBack(t, ws, "size")); got == "67108864" {
		t.Errorf("/tmp took all 64 MiB (size %s)", got)
	}
}

func TestLimitFileSize(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "head")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Limits: Limits{FileSize: 1 << 20}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "head -c 2097152 /dev/zero > big"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 153", "larger than 1 MiB (tools.run_command.limits.file_size)")
	fi, err := os.Stat(filepath.Join(ws.Dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 1<<20 {
		t.Errorf("big is %d bytes, over the 1 MiB limit", fi.Size())
	}
}

func TestLimitCPUTime(t *testing.T) {
	needSandbox(t)
	need(t, "sh")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, CommandTimeout: 20 * time.Second, Limits: Limits{CPUTime: time.Second}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "while :; do :; done"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 152", "CPU time limit (1s, tools.run_command.limits.cpu_time)")
}

func TestLimitMemory(t *testing.T) {
	needSandbox(t)
	need(t, "python3")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"python3"}, Limits: Limits{Memory: 128 << 20}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"python3", "-c",
		"open('started', 'w').close()\nx = bytearray(512 << 20)\nopen('allocated', 'w').close()"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "exit code: 1", "MemoryError", "at most 128 MiB of address space (tools.run_command.limits.memory)")
	readBack(t, ws, "started")
	mustNotExist(t, filepath.Join(ws.Dir, "allocated"))
}

func TestLimitOutput(t *testing.T) {
	needSandbox(t)
	need(t, "yes")
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"yes"}, CommandTimeout: 10 * time.Second, Limits: Limits{Output: 1 << 20}})
	m := marker()
	_, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"yes", m}})
	wantErr(t, err, "yes "+m+" was stopped: it wrote more than 1 MiB of output (the limit tools.run_command.limits.output)", "bytes of output omitted")
	if pids := procsWith(t, m); len(pids) > 0 {
		t.Errorf("yes still runs after the output limit (pids %v)", pids)
	}
}
