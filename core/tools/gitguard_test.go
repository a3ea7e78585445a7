//go:build unix

package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// hostGit runs git on the host in dir, without the user's or the system's config.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo is a workspace holding a git repository with one commit, and its .git/config.
func gitRepo(t *testing.T) (core.Workspace, string) {
	t.Helper()
	ws := testWS(t, map[string]string{"README.md": "hello\n"})
	hostGit(t, ws.Dir, "init", "-q")
	hostGit(t, ws.Dir, "add", "README.md")
	hostGit(t, ws.Dir, "commit", "-qm", "first")
	config, err := os.ReadFile(filepath.Join(ws.Dir, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	return ws, string(config)
}

// TestRunCommandGuardsGit: a hook or a core.fsmonitor planted by one command runs with
// the next git call, the agent's or a person's. The sandbox refuses the writes; without
// it they are put back after the command. Either way git commit still works.
func TestRunCommandGuardsGit(t *testing.T) {
	need(t, "sh", "git", "chmod")
	plant := `mkdir -p .git/hooks .git/info; printf '#!/bin/sh\ntouch pwned-hook\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; ` +
		`git config core.fsmonitor 'touch pwned-fsmonitor'; echo '* filter=evil' > .git/info/attributes; rm -f .git/info/exclude; echo end`
	bothSandboxes(t, func(t *testing.T, mode string) {
		ws, config := gitRepo(t)
		exclude := readBack(t, ws, ".git/info/exclude")
		tb := New(Config{RunCommand: true, Allow: []string{"sh", "git"}, Sandbox: mode})
		out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", plant}})
		if err != nil {
			t.Fatal(err)
		}
		wantContains(t, "output", out, "end\n")
		if mode == SandboxNone {
			wantContains(t, "output", out, "The command changed .git/config, .git/hooks, .git/info, and they were put back", "git -c key=value")
		} else {
			wantContains(t, "output", out, "Read-only file system")
		}
		mustNotExist(t, filepath.Join(ws.Dir, ".git/hooks/pre-commit"))
		mustNotExist(t, filepath.Join(ws.Dir, ".git/info/attributes"))
		wantFile(t, filepath.Join(ws.Dir, ".git/config"), config)
		wantFile(t, filepath.Join(ws.Dir, ".git/info/exclude"), exclude)

		out, err = call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c",
			"echo b > b && git add b && git -c user.name=a -c user.email=a@example.org commit -qm second && git status --short && echo committed"}})
		if err != nil {
			t.Fatal(err)
		}
		wantContains(t, "commit", out, "exit code: 0", "committed\n")
		if strings.Contains(out, "put back") {
			t.Errorf("git commit changed a guarded part:\n%s", out)
		}
		if n := hostGit(t, ws.Dir, "rev-list", "--count", "HEAD"); n != "2" {
			t.Errorf("the repository has %s commits, want 2", n)
		}
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-hook"))
		mustNotExist(t, filepath.Join(ws.Dir, "pwned-fsmonitor"))
	})
}

// TestRunCommandRemovesCreatedGitParts: where the workspace had no .git, what a command
// creates of the guarded parts is removed; the rest of the repository stays.
func TestRunCommandRemovesCreatedGitParts(t *testing.T) {
	need(t, "sh", "mkdir")
	ws := testWS(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n"})
	tb := newRun(t, Config{RunCommand: true, Allow: []string{"sh"}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c",
		"mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout && echo '[core]' > .git/config && echo end"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "end\n", "The command changed .git/config, .git/hooks, and they were put back")
	mustNotExist(t, filepath.Join(ws.Dir, ".git/hooks"))
	mustNotExist(t, filepath.Join(ws.Dir, ".git/config"))
	wantFile(t, filepath.Join(ws.Dir, ".git/HEAD"), "ref: refs/heads/main\n")
}

// TestRunCommandGuardsGitThroughSymlink: a .git the command turned into a symlink to a
// directory outside the workspace does not lead the put-back out of it.
func TestRunCommandGuardsGitThroughSymlink(t *testing.T) {
	need(t, "git", "sh", "ln", "mv")
	ws, _ := gitRepo(t)
	outside := filepath.Join(filepath.Dir(ws.Dir), "elsewhere")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: SandboxNone})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "mv .git .git-moved && ln -s " + outside + " .git && echo end"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "output", out, "end\n", "put back")
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the put-back wrote outside the workspace: %v", entries)
	}
}
