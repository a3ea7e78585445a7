package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/store/pgtest"
)

// TestMain lets the test binary stand in for the plangate binary: with PLANGATE_TEST_MAIN
// set it runs main() with the remaining arguments, so tests can kill a real process.
// With PLANGATE_TEST_UNIT_STAGE set it runs a stage of the emulated systemd unit instead
// (unitStage).
func TestMain(m *testing.M) {
	if stage := os.Getenv(unitStageEnv); stage != "" {
		os.Exit(unitStage(stage, os.Args[1:]))
	}
	if os.Getenv("PLANGATE_TEST_MAIN") == "1" {
		os.Args = append([]string{"plangate"}, os.Args[1:]...)
		main()
		return
	}
	os.Exit(pgtest.Main(m))
}

func plangateCmd(t *testing.T, ctx context.Context, dir string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLANGATE_TEST_MAIN=1", "OPENAI_API_KEY=")
	return cmd
}

// TestKillAndRestart kills a real plangate chat process with SIGKILL while its plan waits
// for approval, starts it again, and decides: the session, phase, pending plan and approval
// id all survive, and the decision after the restart works.
func TestKillAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	demo, _ := filepath.Abs(filepath.Join("..", "..", "demo", "script.yaml"))
	cfg := "store: {path: plangate.db}\nplans: {dir: plans}\nllm: {provider: script, script: " + demo + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	chat := startChat(t, ctx, dir)
	chat.say(t, "/plan on tidy the docs")
	// Wait until the plan has been posted, then kill without warning.
	seen := chat.until(func(l string) bool { return strings.HasPrefix(l, "[attachment]") })
	if err := chat.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = chat.cmd.Wait()
	if !strings.Contains(strings.Join(seen, "\n"), "Plan v1 — Docs cleanup") {
		t.Fatalf("plan not posted before the kill:\n%s", strings.Join(seen, "\n"))
	}

	before := sessionJSONOf(t, ctx, dir)
	if before.Phase != "awaiting_approval" || before.Plan == nil || before.Plan.Status != "pending" {
		t.Fatalf("after the kill: %+v", before)
	}

	cmd := plangateCmd(t, ctx, dir, "chat")
	cmd.Stdin = strings.NewReader("/plan status\n/plan accept\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("restarted chat: %v\n%s", err, out)
	}
	for _, want := range []string{"phase: awaiting_approval", `Accepted plan v1 "Docs cleanup"`, "Done: 2 of 2 steps. Plan v1 completed."} {
		if !strings.Contains(string(out), want) {
			t.Errorf("restarted chat output lacks %q:\n%s", want, out)
		}
	}
	after := sessionJSONOf(t, ctx, dir)
	if after.Phase != "off" || after.Plan == nil || after.Plan.ID != before.Plan.ID || after.Plan.Status != "completed" {
		t.Fatalf("after accept: %+v", after)
	}
}

// sessionJSON is the view `plangate sessions show --json` prints.
type sessionJSON = adminapi.SessionJSON

func sessionJSONOf(t *testing.T, ctx context.Context, dir string) sessionJSON {
	t.Helper()
	cmd := plangateCmd(t, ctx, dir, "sessions", "show", "terminal:local:main", "--json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sessions show: %v\n%s", err, out)
	}
	var s sessionJSON
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	return s
}

// runningChat is a `plangate chat` process with its stdin and stdout piped.
type runningChat struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startChat starts `plangate chat` in dir.
func startChat(t *testing.T, ctx context.Context, dir string) *runningChat {
	t.Helper()
	cmd := plangateCmd(t, ctx, dir, "chat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &runningChat{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
}

// say types one line.
func (c *runningChat) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// until reads printed lines until one satisfies done and returns the lines read.
func (c *runningChat) until(done func(line string) bool) []string {
	var seen []string
	for c.out.Scan() {
		seen = append(seen, c.out.Text())
		if done(c.out.Text()) {
			break
		}
	}
	return seen
}
