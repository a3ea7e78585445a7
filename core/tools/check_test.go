package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// A plan's command check runs under run_command's rules in the real sandbox: its exit
// code and the tail of its output are the run; a program that may not run, a timeout and
// an over-long output are runs that did not pass, saying why.
func TestRunCheck(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	ws := core.Workspace{SessionID: "s", Dir: filepath.Join(dir, "ws")}
	tb := New(Config{RunCommand: true, Allow: []string{"sh", "true"}, CommandTimeout: 2 * time.Second})
	script := map[string]string{
		"fail.sh":  "echo starting; i=0; while [ $i -lt 3000 ]; do echo noise $i; i=$((i+1)); done; echo 'FAIL: the end'; exit 4\n",
		"slow.sh":  "echo waiting; while :; do :; done\n",
		"write.sh": "echo made > made.txt\n",
	}
	if err := os.MkdirAll(ws.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range script {
		if err := os.WriteFile(filepath.Join(ws.Dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		argv     []string
		exit     int
		err      string // a prefix of Error; "" = it exited
		tailHas  string
		passed   bool
		maxBytes int
	}{
		{argv: []string{"true"}, exit: 0, passed: true},
		{argv: []string{"sh", "fail.sh"}, exit: 4, tailHas: "FAIL: the end", maxBytes: 2100},
		{argv: []string{"sh", "slow.sh"}, exit: -1, err: "timed out after 2s", tailHas: "waiting"},
		{argv: []string{"curl", "x"}, exit: -1, err: `not run: "curl" is not an allowed program`},
		{argv: []string{"sh", "write.sh"}, exit: 0, passed: true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			run, err := tb.RunCheck(t.Context(), ws, tc.argv)
			if err != nil {
				t.Fatal(err)
			}
			if run.ExitCode != tc.exit || run.Passed() != tc.passed || !strings.HasPrefix(run.Error, tc.err) || (tc.err == "" && run.Error != "") {
				t.Fatalf("run %+v, want exit %d, error %q, passed %v", run, tc.exit, tc.err, tc.passed)
			}
			if !strings.Contains(run.Tail, tc.tailHas) || tc.maxBytes > 0 && len(run.Tail) > tc.maxBytes {
				t.Fatalf("tail of %d bytes %q, want %q in at most %d", len(run.Tail), run.Tail, tc.tailHas, tc.maxBytes)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("a check runs in the workspace: made.txt %q, %v", b, err)
	}
	if err := tb.CheckArgv([]string{"sh", "x"}); err != nil {
		t.Fatalf("an allowed program: %v", err)
	}
	if err := New(Config{Allow: []string{"sh"}}).CheckArgv([]string{"sh"}); err == nil || !strings.Contains(err.Error(), "run_command is disabled") {
		t.Fatalf("with run_command off: %v", err)
	}
}
