package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The systemd unit is checked with systemd's own tools, offline: no running systemd is
// needed. CI installs them (Debian's systemd package).

// needPrograms skips the test when one of progs is not installed, or fails it under
// CI=true.
func needPrograms(t *testing.T, progs ...string) {
	t.Helper()
	for _, prog := range progs {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true (Debian packages: systemd, bubblewrap, util-linux)", prog)
			}
			t.Skipf("%s is not installed", prog)
		}
	}
}

// unitStageEnv names the stage of the emulated unit a re-executed test binary runs
// (unitStage, TestSandboxUnderUnit).
const unitStageEnv = "PLANGATE_TEST_UNIT_STAGE"

// maxExposure is the highest `systemd-analyze security` score the unit may have (its
// --threshold is ten times this).
const maxExposure = 3.0

// TestUnitSecurityScore: systemd-analyze rates the shipped unit at most maxExposure, and
// the score the unit's own comment states is the one it gets.
func TestUnitSecurityScore(t *testing.T) {
	needPrograms(t, "systemd-analyze")
	unit := filepath.Join("..", "..", "deploy", "plangate.service")
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold="+strconv.Itoa(int(maxExposure*10)), "--no-pager", unit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for plangate.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no overall exposure (%v):\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("exposure %.1f", score)
	if err != nil || score > maxExposure {
		t.Fatalf("the unit's exposure is %.1f, above %.1f (%v); the settings that count:\n%s", score, maxExposure, err, failedChecks(out))
	}
	if want := "scores it " + string(m[1]) + ";"; !strings.Contains(readDeploy(t, "plangate.service"), want) {
		t.Errorf("plangate.service's comment does not say %q: update it", want)
	}
}

// failedChecks keeps the lines of systemd-analyze security's table that add exposure.
func failedChecks(out []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "✗") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestUnitVerify runs systemd-analyze verify on the unit in a minimal root (the targets
// it names, an executable at ExecStart's path): a misspelt or unknown setting, a bad
// value or an unknown system call group is reported and fails the test. A broken copy
// shows the check reports such mistakes.
func TestUnitVerify(t *testing.T) {
	needPrograms(t, "systemd-analyze")
	shipped := readDeploy(t, "plangate.service")
	for _, tc := range []struct {
		name, unit, want string
	}{
		{"as shipped", shipped, ""},
		{"unknown setting", strings.Replace(shipped, "\nNoNewPrivileges=yes\n", "\nNoNewPrivileges=yes\nProtectKernelTunable=yes\n", 1), "Unknown key 'ProtectKernelTunable'"},
		{"unknown group", strings.Replace(shipped, "\nSystemCallFilter=@system-service @mount\n", "\nSystemCallFilter=@system-service @mounts\n", 1), "Unknown system call group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unit == shipped && tc.want != "" {
				t.Fatal("the broken copy is the shipped unit: the replacement found nothing")
			}
			root := t.TempDir()
			write := func(rel, content string, mode os.FileMode) {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), mode); err != nil {
					t.Fatal(err)
				}
			}
			write("etc/systemd/system/plangate.service", tc.unit, 0o644)
			write("usr/local/bin/plangate", "#!/bin/sh\n", 0o755)
			for _, target := range []string{"sysinit", "basic", "shutdown", "network-online", "multi-user"} {
				write("usr/lib/systemd/system/"+target+".target", "[Unit]\nDescription="+target+"\n", 0o644)
			}
			out, err := exec.Command("systemd-analyze", "verify", "--root="+root, "--man=no", "--no-pager", "plangate.service").CombinedOutput()
			got := strings.TrimSpace(string(out))
			switch {
			case tc.want == "" && (err != nil || got != ""):
				t.Fatalf("systemd-analyze verify (%v):\n%s", err, got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("systemd-analyze verify did not report %q (%v):\n%s", tc.want, err, got)
			}
		})
	}
}
