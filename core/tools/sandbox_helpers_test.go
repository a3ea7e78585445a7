package tools

import (
	"os"
	"testing"
)

// needSandbox skips a test when bwrap cannot start a sandbox here, except in CI
// (CI=true), where the sandbox is part of what is tested: there its absence fails.
func needSandbox(t *testing.T) {
	t.Helper()
	if _, err := newSandbox("", false); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot start and CI=true: %v", err)
		}
		t.Skipf("the sandbox cannot start here: %v", err)
	}
}

// newRun builds a toolbox for the generic run_command tests: in the sandbox where it can
// start (always in CI), else without one, so those tests still run on any developer
// machine.
func newRun(t *testing.T, cfg Config) *Toolbox {
	t.Helper()
	if _, err := newSandbox("", false); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot start and CI=true: %v", err)
		}
		cfg.Sandbox = SandboxNone
	}
	return New(cfg)
}

// bothSandboxes runs test once under bwrap (needSandbox's rules) and once with
// sandbox: none, each as a subtest named by the mode.
func bothSandboxes(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{SandboxBwrap, SandboxNone} {
		t.Run(mode, func(t *testing.T) {
			if mode == SandboxBwrap {
				needSandbox(t)
			}
			test(t, mode)
		})
	}
}
