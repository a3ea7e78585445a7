package tools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPlanCopyRefusals: with ProtectPlanCopy, WritePaths and the write tools refuse the
// copy's names however they are spelled, and any path that is the same file; reads work;
// without it, PLAN.md is an ordinary file.
func TestPlanCopyRefusals(t *testing.T) {
	ws := testWS(t, map[string]string{"PLAN.md": "# Plan\n", "PLAN.json": "{}\n", "docs/PLAN.md": "notes\n"})
	if err := os.Link(filepath.Join(ws.Dir, "PLAN.md"), filepath.Join(ws.Dir, "docs", "copy.md")); err != nil {
		t.Fatal(err)
	}
	tb := New(Config{ProtectPlanCopy: true})
	for _, p := range []string{"PLAN.md", "plan.MD", "./PLAN.json", "docs/../Plan.json"} {
		args, _ := json.Marshal(map[string]string{"path": p, "content": "x"})
		if _, err := tb.WritePaths(ToolWriteFile, args); err == nil || !strings.Contains(err.Error(), "the person's contract; it cannot be changed") {
			t.Errorf("WritePaths(write_file %s) = %v, want the contract refusal", p, err)
		}
		if _, err := call(t, tb, ws, ToolWriteFile, map[string]string{"path": p, "content": "x"}); err == nil {
			t.Errorf("write_file %s was not refused", p)
		}
		if _, err := call(t, tb, ws, ToolEditFile, map[string]string{"path": p, "old": "Plan", "new": "Mine"}); err == nil {
			t.Errorf("edit_file %s was not refused", p)
		}
	}
	// The hard link shares PLAN.md's inode: refused by the contract, not as a link count.
	_, err := call(t, tb, ws, ToolEditFile, map[string]string{"path": "docs/copy.md", "old": "Plan", "new": "Mine"})
	if err == nil || !strings.HasPrefix(err.Error(), "PLAN.md is the approved plan") {
		t.Errorf("edit_file through a hard link: %v", err)
	}
	// (A second link also keeps read_file from reading PLAN.md; the engine's next rewrite
	// replaces the file, and under bwrap a command cannot link across the read-only bind.)
	if err := os.Remove(filepath.Join(ws.Dir, "docs", "copy.md")); err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, tb, ws, ToolReadFile, map[string]string{"path": "PLAN.md"}); err != nil || !strings.Contains(got, "# Plan") {
		t.Errorf("read_file PLAN.md = %q, %v; the agent may read it", got, err)
	}
	if _, err := call(t, tb, ws, ToolWriteFile, map[string]string{"path": "docs/PLAN.md", "content": "more notes\n"}); err != nil {
		t.Errorf("docs/PLAN.md is not the copy: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "PLAN.md")); string(b) != "# Plan\n" {
		t.Fatalf("PLAN.md = %q", b)
	}
	open := New(Config{})
	if _, err := call(t, open, ws, ToolWriteFile, map[string]string{"path": "PLAN.json", "content": "[]"}); err != nil {
		t.Errorf("without protection PLAN.json is an ordinary file: %v", err)
	}
}

// TestSandboxBindsPlanCopyReadOnly: the copy's existing regular files are bound read-only
// after the workspace; a missing file or a symlink at the name is not bound (a bind would
// create it, or follow the link).
func TestSandboxBindsPlanCopyReadOnly(t *testing.T) {
	ws := testWS(t, map[string]string{"PLAN.md": "# Plan\n"})
	if err := os.Symlink("/etc/hostname", filepath.Join(ws.Dir, "PLAN.json")); err != nil {
		t.Fatal(err)
	}
	s := &sandbox{bwrap: "bwrap", protect: true}
	args := s.args(ws.Dir, "true", nil)
	md := filepath.Join(ws.Dir, "PLAN.md")
	i, j := slices.Index(args, md), slices.Index(args, ws.Dir)
	if i < 2 || args[i-1] != "--ro-bind" || args[i+1] != md || j < 0 || j > i {
		t.Fatalf("PLAN.md is not bound read-only after the workspace: %q", args)
	}
	if slices.Contains(args, filepath.Join(ws.Dir, "PLAN.json")) {
		t.Fatalf("a symlink at PLAN.json was bound: %q", args)
	}
	s.protect = false
	if slices.Contains(s.args(ws.Dir, "true", nil), md) {
		t.Fatal("bound without ProtectPlanCopy")
	}
}

// TestRunCommandPutsPlanCopyBack: without a sandbox nothing stops a command, so whatever
// it does to the copy (rewrite in place, replace with a directory or a symlink, delete) is
// undone after it, and the result says so; a command that leaves them alone gets no note.
func TestRunCommandPutsPlanCopyBack(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: SandboxNone, ProtectPlanCopy: true})
	if !strings.Contains(tb.Tools()[3].Description, "PLAN.md and PLAN.json at the workspace root are the accepted plan") {
		t.Errorf("write_file does not say the copy is read-only: %s", tb.Tools()[3].Description)
	}
	for script, changed := range map[string]bool{
		"echo mine > PLAN.md":                            true,
		"rm PLAN.md && mkdir PLAN.md && touch PLAN.md/x": true,
		"rm PLAN.json && ln -s /etc/hostname PLAN.json":  true,
		"cat PLAN.md PLAN.json > seen.txt":               false,
	} {
		ws := testWS(t, map[string]string{"PLAN.md": "# Plan\n", "PLAN.json": "{\"format\": 1}\n"})
		got, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		if note := strings.Contains(got, "the person's contract; it cannot be changed: the command changed it, and it was put back."); note != changed {
			t.Errorf("%s: result %q; want a note: %v", script, got, changed)
		}
		for name, want := range map[string]string{"PLAN.md": "# Plan\n", "PLAN.json": "{\"format\": 1}\n"} {
			fi, err := os.Lstat(filepath.Join(ws.Dir, name))
			b, _ := os.ReadFile(filepath.Join(ws.Dir, name))
			if err != nil || !fi.Mode().IsRegular() || string(b) != want {
				t.Errorf("%s: %s is %v %q after the command, want the regular file %q", script, name, fi, b, want)
			}
		}
	}
}

// TestRunCommandPutsLargePlanCopyBack: an accepted plan can render to more than the file
// tools' 4 MB (50 steps of 50 criteria of 2000 characters each); its copy is still
// protected: a copy the snapshot skipped for its size would be the agent's to rewrite.
func TestRunCommandPutsLargePlanCopyBack(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	big := "# Plan\n" + strings.Repeat("- [ ] criterion\n", (maxCountBytes/16)+1)
	ws := testWS(t, map[string]string{"PLAN.md": big, "PLAN.json": "{\"format\": 1}\n"})
	tb := New(Config{RunCommand: true, Allow: []string{"sh"}, Sandbox: SandboxNone, ProtectPlanCopy: true})
	got, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "echo mine > PLAN.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "PLAN.md")); string(b) != big {
		t.Errorf("PLAN.md of %d bytes is %d bytes after the command (%q); result %q", len(big), len(b), b[:min(len(b), 20)], got)
	}
}
