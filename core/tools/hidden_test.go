//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHiddenFilesInsideTheWorkspace: should plangate's own files lie inside the workspace
// (the configuration check refuses it), the file tools still do not touch them.
func TestHiddenFilesInsideTheWorkspace(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "hello\n", "plangate.db": "db secret\n", "plans/s1/plan.md": "plan secret\n"})
	if err := os.Symlink("plans", filepath.Join(ws.Dir, "via-link")); err != nil {
		t.Fatal(err)
	}
	tb := New(Config{Hidden: []string{filepath.Join(ws.Dir, "plangate.db"), filepath.Join(ws.Dir, "plans")}})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{ToolReadFile, map[string]any{"path": "plangate.db"}},
		{ToolReadFile, map[string]any{"path": "plans/s1/plan.md"}},
		{ToolReadFile, map[string]any{"path": "via-link/s1/plan.md"}},
		{ToolListFiles, map[string]any{"path": "plans"}},
		{ToolSearchFiles, map[string]any{"pattern": "secret", "path": "plans"}},
		{ToolWriteFile, map[string]any{"path": "plangate.db", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "plans/s1/new.md", "content": "x"}},
		{ToolEditFile, map[string]any{"path": "plangate.db", "old": "db", "new": "x"}},
	} {
		_, err := call(t, tb, ws, c.tool, c.args)
		wantErr(t, err, "one of plangate's own files")
	}
	out, err := call(t, tb, ws, ToolListFiles, map[string]any{"depth": 5})
	if err != nil || strings.Contains(out, "plangate.db") || strings.Contains(out, "plans/") || !strings.Contains(out, "README.md") {
		t.Errorf("list_files = %q, %v; want README.md without plangate's files", out, err)
	}
	out, err = call(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "secret|hello"})
	if err != nil || strings.Contains(out, "secret") || !strings.Contains(out, "README.md:1: hello") {
		t.Errorf("search_files = %q, %v", out, err)
	}
	wantFile(t, filepath.Join(ws.Dir, "plangate.db"), "db secret\n")
	mustNotExist(t, filepath.Join(ws.Dir, "plans/s1/new.md"))
}

// TestHiddenFilesOutsideTheWorkspace: plangate's files next to or above the workspace (the
// usual layout) change nothing for the file tools.
func TestHiddenFilesOutsideTheWorkspace(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "hello\n"})
	parent := filepath.Dir(ws.Dir)
	tb := New(Config{Hidden: []string{parent, filepath.Join(parent, "plangate.db")}})
	if out, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "README.md"}); err != nil || !strings.Contains(out, "hello") {
		t.Errorf("read_file = %q, %v", out, err)
	}
	if _, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "new.md", "content": "x"}); err != nil {
		t.Errorf("write_file: %v", err)
	}
}
