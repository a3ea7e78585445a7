package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
)

// hostileSetup makes a workspace next to an "outside" directory holding a secret, with
// symlinks inside the workspace that lead out of it (relative and absolute), one that
// stays inside, and a symlinked directory.
func hostileSetup(t *testing.T) (ws core.Workspace, outside string) {
	t.Helper()
	base := t.TempDir()
	outside = filepath.Join(base, "outside")
	writeTree(t, outside, map[string]string{"secret.txt": "SECRET\n"})
	ws = core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	writeTree(t, ws.Dir, map[string]string{"a/inside.txt": "inside\n", "README.md": "hello\n"})
	links := map[string]string{
		"escape":     "../outside/secret.txt",
		"escape-abs": filepath.Join(outside, "secret.txt"),
		"outdir":     "../outside",
		"a/up":       "../../outside",
		"good":       "a/inside.txt",
		"gooddir":    "a",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws.Dir, filepath.FromSlash(name))); err != nil {
			t.Skipf("symlinks not available: %v", err)
		}
	}
	return ws, outside
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHostilePaths(t *testing.T) {
	paths := []struct {
		name, path string
		want       string // a piece of every tool's error
	}{
		{"absolute", "/etc/passwd", "absolute path"},
		{"absolute outside dir", "OUTSIDE/secret.txt", "absolute path"},
		{"dot-dot", "../outside/secret.txt", "outside the workspace"},
		{"dot-dot inside then out", "a/../../outside/secret.txt", "outside the workspace"},
		{"relative symlink out", "escape", "outside the workspace"},
		{"absolute symlink out", "escape-abs", "outside the workspace"},
		{"symlinked dir out", "outdir/secret.txt", "outside the workspace"},
		{"symlinked dir out itself", "outdir", "outside the workspace"},
		{"nested symlink out", "a/up/secret.txt", "outside the workspace"},
		{"NUL byte", "README.md\x00.txt", "NUL byte"},
	}
	tools := []struct {
		name string
		args func(p string) any
		// writes through a symlink are refused before os.Root is asked, with their own words
		symlinkWord string
	}{
		{ToolReadFile, func(p string) any { return map[string]any{"path": p} }, ""},
		{ToolListFiles, func(p string) any { return map[string]any{"path": p} }, ""},
		{ToolSearchFiles, func(p string) any { return map[string]any{"path": p, "pattern": "SECRET"} }, ""},
		{ToolWriteFile, func(p string) any { return map[string]any{"path": p, "content": "pwned"} }, "symlink"},
		{ToolEditFile, func(p string) any { return map[string]any{"path": p, "old": "SECRET", "new": "pwned"} }, "symlink"},
	}
	for _, tool := range tools {
		for _, pc := range paths {
			t.Run(tool.name+"/"+pc.name, func(t *testing.T) {
				ws, outside := hostileSetup(t)
				before := snapshot(t, outside)
				tb := New(Config{})
				p := strings.ReplaceAll(pc.path, "OUTSIDE", outside)
				out, err := call(t, tb, ws, tool.name, tool.args(p))
				if err == nil {
					t.Fatalf("%s(%q) = %q, want a refusal", tool.name, p, out)
				}
				want := pc.want
				if tool.symlinkWord != "" && (strings.Contains(pc.name, "symlink")) {
					want = tool.symlinkWord
				}
				wantContains(t, "error", err.Error(), want)
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error leaks the outside file: %v", err)
				}
				if strings.Contains(err.Error(), ws.Dir) {
					t.Errorf("error names the host directory: %v", err)
				}
				if after := snapshot(t, outside); !mapsEqual(before, after) {
					t.Errorf("outside directory changed: %v -> %v", before, after)
				}
			})
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestEmptyPath(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "hello\n"})
	tb := New(Config{})
	cases := []struct {
		tool    string
		args    any
		wantOut string // "" = an error mentioning "path is required"
	}{
		{ToolReadFile, map[string]any{"path": ""}, ""},
		{ToolWriteFile, map[string]any{"path": "", "content": "x"}, ""},
		{ToolEditFile, map[string]any{"path": "", "old": "a", "new": "b"}, ""},
		{ToolListFiles, map[string]any{"path": ""}, "README.md"}, // empty = the workspace root
		{ToolSearchFiles, map[string]any{"path": "", "pattern": "hello"}, "README.md:1: hello"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			out, err := call(t, tb, ws, c.tool, c.args)
			if c.wantOut == "" {
				wantErr(t, err, "path is required")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantContains(t, "output", out, c.wantOut)
		})
	}
}

func TestSymlinksInsideRoot(t *testing.T) {
	ws, _ := hostileSetup(t)
	tb := New(Config{})
	out, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "good"})
	if err != nil {
		t.Fatalf("reading through a symlink inside the root: %v", err)
	}
	wantContains(t, "read_file good", out, "inside")
	out, err = call(t, tb, ws, ToolListFiles, map[string]any{"path": "gooddir"})
	if err != nil {
		t.Fatalf("listing a symlinked directory inside the root: %v", err)
	}
	wantContains(t, "list_files gooddir", out, "gooddir/inside.txt")
	out, err = call(t, tb, ws, ToolListFiles, map[string]any{"depth": 1})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "list_files", out, "escape -> ../outside/secret.txt\n", "gooddir -> a\n")

	// A write through an inside link would dodge the plan's scope check on the link's path.
	_, err = call(t, tb, ws, ToolWriteFile, map[string]any{"path": "gooddir/new.txt", "content": "x"})
	wantErr(t, err, "symlink gooddir", "real path")
	_, err = call(t, tb, ws, ToolEditFile, map[string]any{"path": "good", "old": "inside", "new": "changed"})
	wantErr(t, err, "symlink good")
	if got := readBack(t, ws, "a/inside.txt"); got != "inside\n" {
		t.Errorf("a/inside.txt = %q, want it unchanged", got)
	}
	if _, err := os.Lstat(filepath.Join(ws.Dir, "a", "new.txt")); err == nil {
		t.Error("a/new.txt was created through the symlink")
	}
}

func TestCleanPath(t *testing.T) {
	cases := []struct {
		in, want         string
		emptyIsRoot, bad bool
	}{
		{in: "README.md", want: "README.md"},
		{in: "./docs//guide.md", want: "docs/guide.md"},
		{in: "docs/./a/../guide.md", want: "docs/guide.md"},
		{in: "docs/", want: "docs"},
		{in: ".", want: "."},
		{in: "", emptyIsRoot: true, want: "."},
		{in: "", bad: true},
		{in: "..", bad: true},
		{in: "a/../..", bad: true},
		{in: "/abs", bad: true},
		{in: `\abs`, bad: true},
		{in: "a\x00b", bad: true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := cleanPath(c.in, c.emptyIsRoot)
			if c.bad {
				if err == nil {
					t.Fatalf("cleanPath(%q) = %q, want an error", c.in, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("cleanPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

func TestWritePaths(t *testing.T) {
	cases := []struct {
		name    string
		tb      *Toolbox
		tool    string
		args    string
		want    []string
		wantErr string
	}{
		{"write cleaned", New(Config{}), ToolWriteFile, `{"path":"./docs//new.md","content":""}`, []string{"docs/new.md"}, ""},
		{"edit cleaned", New(Config{}), ToolEditFile, `{"path":"docs/../README.md","old":"a","new":"b"}`, []string{"README.md"}, ""},
		{"run is the whole workspace", New(Config{RunCommand: true, Allow: []string{"ls"}}), ToolRunCommand, `{"argv":["ls"]}`, []string{"."}, ""},
		{"read changes nothing", New(Config{}), ToolReadFile, `{"path":"x"}`, nil, ""},
		{"list changes nothing", New(Config{}), ToolListFiles, `{}`, nil, ""},
		{"search changes nothing", New(Config{}), ToolSearchFiles, `{"pattern":"x"}`, nil, ""},
		{"run disabled", New(Config{}), ToolRunCommand, `{"argv":["ls"]}`, nil, "disabled"},
		{"absolute write", New(Config{}), ToolWriteFile, `{"path":"/etc/x","content":""}`, nil, "absolute path"},
		{"escaping edit", New(Config{}), ToolEditFile, `{"path":"../x","old":"a","new":"b"}`, nil, "outside the workspace"},
		{"write to the root", New(Config{}), ToolWriteFile, `{"path":"./","content":""}`, nil, "needs a file path"},
		{"edit in .git", New(Config{}), ToolEditFile, `{"path":".git/config","old":"a","new":"b"}`, nil, "inside .git"},
		{"bad args", New(Config{}), ToolWriteFile, `{"file":"x"}`, nil, `unknown field "file"`},
		{"unknown tool", New(Config{}), "delete_file", `{}`, nil, "unknown workspace tool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.tb.WritePaths(c.tool, json.RawMessage(c.args))
			if c.wantErr != "" {
				wantErr(t, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("WritePaths = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDecodeArgs(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "hello\n"})
	tb := New(Config{})
	cases := []struct {
		name, tool, args string
		want             []string
	}{
		{"unknown field", ToolReadFile, `{"file":"README.md"}`, []string{`unknown field "file"`, "{path: string, offset?: int, limit?: int}"}},
		{"wrong type", ToolReadFile, `{"path":"README.md","offset":"3"}`, []string{`field "offset": got a JSON string, want an integer`}},
		{"not an object", ToolListFiles, `["."]`, []string{"got a JSON array, want an object"}},
		{"trailing data", ToolReadFile, `{"path":"README.md"} {"path":"x"}`, []string{"extra data"}},
		{"broken JSON", ToolWriteFile, `{"path":`, []string{"write_file arguments are invalid"}},
		{"missing content", ToolWriteFile, `{"path":"x.md"}`, []string{"content is required"}},
		{"missing new", ToolEditFile, `{"path":"README.md","old":"hello"}`, []string{"old and new are both required"}},
		{"unknown tool", "delete_file", `{}`, []string{"unknown workspace tool"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, tb, ws, c.tool, c.args)
			wantErr(t, err, c.want...)
		})
	}
	// No arguments at all is an empty object: list_files has only optional fields.
	if out, err := tb.Call(context.Background(), ws, ToolListFiles, nil); err != nil || !strings.Contains(out, "README.md") {
		t.Errorf("list_files with no arguments = %q, %v", out, err)
	}
}

func TestSeed(t *testing.T) {
	base := t.TempDir()
	seed := filepath.Join(base, "seed")
	writeTree(t, seed, map[string]string{"README.md": "sample\n", "docs/guide.md": "guide\n", "empty/": ""})
	writeTree(t, filepath.Join(base, "outside"), map[string]string{"secret.txt": "SECRET"})
	if err := os.Symlink("../outside/secret.txt", filepath.Join(seed, "link")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	tb := New(Config{Seed: seed})
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "sessions", "main")}

	out, err := call(t, tb, ws, ToolListFiles, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "README.md\ndocs/\ndocs/guide.md\nempty/\n"; out != want {
		t.Fatalf("seeded workspace lists\n%s\nwant\n%s", out, want)
	}
	if _, err := os.Lstat(filepath.Join(ws.Dir, "link")); err == nil {
		t.Error("the seed's symlink was copied")
	}
	entries, _ := os.ReadDir(filepath.Dir(ws.Dir))
	if len(entries) != 1 {
		t.Errorf("the workspace parent holds %d entries, want only the workspace (no temporary copy left)", len(entries))
	}

	// Once a workspace exists it is never seeded again: deleted files stay deleted.
	if err := os.Remove(filepath.Join(ws.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "README.md"}); err == nil {
		t.Fatal("README.md came back: the workspace was seeded twice")
	}

	// An existing workspace is not seeded at all.
	existing := testWS(t, map[string]string{"mine.txt": "x"})
	out, err = call(t, tb, existing, ToolListFiles, map[string]any{})
	if err != nil || out != "mine.txt\n" {
		t.Fatalf("existing workspace lists %q, %v; want only mine.txt", out, err)
	}

	// A missing seed is a clear error, and leaves no half-made workspace.
	bad := New(Config{Seed: filepath.Join(base, "nope")})
	ws2 := core.Workspace{SessionID: "s2", Dir: filepath.Join(base, "sessions", "other")}
	_, err = call(t, bad, ws2, ToolListFiles, map[string]any{})
	wantErr(t, err, "copying the sample workspace")
	if strings.Contains(err.Error(), base) {
		t.Errorf("error names host directories: %v", err)
	}
	if _, err := os.Stat(ws2.Dir); err == nil {
		t.Error("a failed seed left a workspace behind")
	}
}

func TestSeedConcurrent(t *testing.T) {
	base := t.TempDir()
	seed := filepath.Join(base, "seed")
	writeTree(t, seed, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	tb := New(Config{Seed: seed})
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = tb.Call(context.Background(), ws, ToolReadFile, json.RawMessage(`{"path":"d/b.txt"}`))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 2 {
		t.Errorf("base holds %d entries, want seed and ws only", len(entries))
	}
}

func TestWorkspaceErrors(t *testing.T) {
	tb := New(Config{})
	_, err := call(t, tb, core.Workspace{SessionID: "s"}, ToolListFiles, map[string]any{})
	wantErr(t, err, "no workspace directory")

	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, tb, core.Workspace{SessionID: "s", Dir: f}, ToolListFiles, map[string]any{})
	wantErr(t, err, "not a directory")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tb.Call(ctx, testWS(t, nil), ToolListFiles, nil)
	wantErr(t, err, "not run")
}
