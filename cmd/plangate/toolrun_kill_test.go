package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killScript proposes a plan over the whole workspace, runs a slow command once it is
// accepted, and answers the restart note.
const killScript = `turns:
  - match: '^[^\[]'
    tool_calls:
      - name: exit_plan_mode
        args:
          title: Slow job
          summary: Run the slow job once.
          plan:
            - step: Run the slow job
          scope: {allowed_paths: ["**"]}
  - match: '\[PLAN_DECISION\]: approved'
    tool_calls:
      - name: run_command
        args: {argv: [sh, -c, "echo ran >> ran.txt; sleep 20"]}
  - match: '\[RESTART\]'
    text: "Checked the workspace after the restart."
`

// TestKillDuringRunCommand kills a real plangate chat with SIGKILL while run_command runs,
// then starts it again: the command is not run a second time, the chat is told its
// effects are unknown, and the execution is resumed.
func TestKillDuringRunCommand(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(killScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "store: {path: plangate.db}\nplans: {dir: plans}\nworkspace: {root: ws}\nllm: {provider: script, script: script.yaml}\n" +
		"tools: {run_command: {enabled: true, allow: [sh]}}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(dir, "ws", "main", "ran.txt")

	chat := startChat(t, ctx, dir)
	chat.say(t, "/plan on run the slow job")
	chat.until(func(l string) bool { return strings.HasPrefix(l, "[attachment]") })
	go chat.until(func(string) bool { return false }) // keep its output flowing
	chat.say(t, "/plan accept")
	for {
		if b, err := os.ReadFile(ran); err == nil && len(b) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the command never ran")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := chat.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = chat.cmd.Wait()

	cmd := plangateCmd(t, ctx, dir, "chat")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("restarted chat: %v\n%s", err, out)
	}
	for _, want := range []string{
		"plangate restarted while working on plan v1; continuing with step 1.",
		"The run of run_command sh -c echo ran >> ran.txt; sleep 20 was interrupted by a restart; its effects are unknown.",
		"Checked the workspace after the restart.",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("restarted chat lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(ran); string(b) != "ran\n" {
		t.Fatalf("ran.txt = %q: the command ran more than once", b)
	}
}
