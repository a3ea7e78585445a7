package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/tools"
)

// TestRunCommandStartupWarning: with tools.run_command.sandbox: none the operator is
// warned at start, on the log (the chat shows warnings on stderr).
func TestRunCommandStartupWarning(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig+"tools: {run_command: {enabled: true, allow: [true], sandbox: none}}\n")
	code, _, errOut := cli(t, "", "chat", "--config", cfg)
	if code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	if !strings.Contains(errOut, "run_command runs commands without a sandbox (tools.run_command.sandbox: none)") {
		t.Errorf("no start-up warning on stderr:\n%s", errOut)
	}
	cfg = writeConfig(t, defaultTestConfig)
	if _, _, errOut := cli(t, "", "chat", "--config", cfg); strings.Contains(errOut, "run_command") {
		t.Errorf("run_command is off, but start-up mentions it:\n%s", errOut)
	}
}

func TestRunCommandSummary(t *testing.T) {
	if got := runCommandSummary(RunCommandConfig{}); got != "run_command off" {
		t.Errorf("off: %q", got)
	}
	got := runCommandSummary(RunCommandConfig{Enabled: true, Allow: []string{"go"}, Sandbox: "none"})
	if got != "run_command on for 1 programs WITHOUT a sandbox (tools.run_command.sandbox: none)" {
		t.Errorf("none: %q", got)
	}
	got = runCommandSummary(RunCommandConfig{Enabled: true, Allow: []string{"go", "git"}, Sandbox: "bwrap", Limits: defaultRunLimits()})
	if err := tools.CheckSandbox("", false); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot start and CI=true: %v", err)
		}
		if !strings.HasPrefix(got, "run_command unavailable: ") {
			t.Errorf("bwrap without a sandbox: %q", got)
		}
		return
	}
	if got != "run_command on for 2 programs in the bwrap sandbox, no network; limits: 1024 processes, 4GiB memory and 5m0s CPU per process, files up to 1GiB, /tmp 512MiB, output 16MiB" {
		t.Errorf("bwrap: %q", got)
	}
}

func TestPathWithin(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p, root string
		want    bool
	}{
		{filepath.Join(real, "plangate.db"), real, true},
		{real, real, true},
		{filepath.Join(real, "sub", "plans"), real, true},
		{filepath.Join(dir, "plangate.db"), real, false},
		{filepath.Join(dir, "realx", "a.db"), real, false},
		{filepath.Join(real, "plangate.db"), link, true}, // the workspace root is a symlink
		{filepath.Join(link, "plans"), real, true},
	}
	for _, c := range cases {
		if got := pathWithin(c.p, c.root); got != c.want {
			t.Errorf("pathWithin(%s, %s) = %v, want %v", c.p, c.root, got, c.want)
		}
	}
}
