package tools

import (
	"path/filepath"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestDemoWorkspace checks the bundled sample workspace still tells the demo's story: a
// few docs to list and read, a README with typos and a broken relative link to fix.
func TestDemoWorkspace(t *testing.T) {
	seed := filepath.Join("..", "..", "demo", "workspace")
	tb := New(Config{Seed: seed})
	ws := core.Workspace{SessionID: "demo", Dir: filepath.Join(t.TempDir(), "main")}
	out, err := call(t, tb, ws, ToolListFiles, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "README.md\ndocs/\ndocs/faq.md\ndocs/guide.md\n"; out != want {
		t.Fatalf("demo workspace lists\n%s\nwant\n%s", out, want)
	}
	out, err = call(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": `\]\(docs/guid\.md\)|comand|recieve`, "path": "README.md"})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "README search", out, "(docs/guid.md)", "comand", "recieve")
	if _, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "docs/guid.md"}); err == nil {
		t.Error("docs/guid.md exists, so the README's link is not broken")
	}
	if _, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "CHANGELOG.md"}); err == nil {
		t.Error("CHANGELOG.md exists already; the demo agent is meant to create it")
	}
}
