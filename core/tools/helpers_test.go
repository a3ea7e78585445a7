package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// testWS is a workspace directory under t.TempDir with the given files (path -> content;
// a path ending in / makes a directory).
func testWS(t testing.TB, files map[string]string) core.Workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	writeTree(t, dir, files)
	return core.Workspace{SessionID: "s1", Dir: dir}
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call runs one tool with args marshalled from a Go value (or passed as raw JSON).
func call(t testing.TB, tb *Toolbox, ws core.Workspace, name string, args any) (string, error) {
	t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	case nil:
	default:
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return tb.Call(context.Background(), ws, name, raw)
}

func readBack(t testing.TB, ws core.Workspace, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws.Dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("reading %s back: %v", rel, err)
	}
	return string(b)
}

func wantContains(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

func wantErr(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", wants)
	}
	wantContains(t, "error", err.Error(), wants...)
}
