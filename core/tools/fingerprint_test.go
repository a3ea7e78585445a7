package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func fingerprint(t testing.TB, tb *Toolbox, ws core.Workspace) *plan.Tree {
	t.Helper()
	tree, err := tb.Fingerprint(context.Background(), ws)
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return tree
}

func changes(t testing.TB, a, b *plan.Tree) plan.TreeChanges {
	t.Helper()
	c, err := plan.CompareTrees(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A plain directory: every file counts by path, size and content; the plan's own copy and
// the hidden paths do not; a symlink is recorded by its target's name and never followed.
func TestFingerprintPlainDirectory(t *testing.T) {
	ws := testWS(t, map[string]string{"src/a.go": "package a\n", "README.md": "hi\n", "PLAN.md": "plan", "PLAN.json": "{}", "data/": ""})
	hidden := filepath.Join(ws.Dir, "data", "plangate.db")
	writeTree(t, ws.Dir, map[string]string{"data/plangate.db": "secret"})
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	tb := New(Config{Hidden: []string{hidden}})
	before := fingerprint(t, tb, ws)
	files, err := before.Files()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "README.md link src/a.go" {
		t.Fatalf("fingerprinted %q, want README.md link src/a.go", got)
	}
	if before.Head != "" || before.Count != 3 || before.Bytes != int64(len("package a\n")+len("hi\n")) {
		t.Errorf("tree %+v", before)
	}

	// Changes plangate writes itself, to hidden files or behind a symlink, are no change.
	writeTree(t, ws.Dir, map[string]string{"PLAN.md": "plan v2", "data/plangate.db": "other"})
	if err := os.WriteFile(outside, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := changes(t, before, fingerprint(t, tb, ws)); !c.Empty() {
		t.Fatalf("changes %+v, want none", c)
	}

	// A changed, an added and a removed file are each named; so is a re-pointed link.
	writeTree(t, ws.Dir, map[string]string{"src/a.go": "package a // changed\n", "src/b.go": "package a\n"})
	if err := os.Remove(filepath.Join(ws.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/a.go", filepath.Join(ws.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	c := changes(t, before, fingerprint(t, tb, ws))
	if got := c.Words(10); got != "README.md removed, link changed, src/a.go changed and src/b.go added" {
		t.Fatalf("words %q", got)
	}
	if got := c.Words(2); got != "README.md removed, link changed and 2 more" {
		t.Fatalf("words(2) %q", got)
	}
}

// A git repository: HEAD and its branch are part of the fingerprint; .git's own files are not.
func TestFingerprintGitRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := testWS(t, map[string]string{"src/a.go": "package a\n"})
	git(t, ws.Dir, "init", "-q", "-b", "main")
	git(t, ws.Dir, "add", ".")
	git(t, ws.Dir, "commit", "-q", "-m", "one")
	tb := New(Config{})
	before := fingerprint(t, tb, ws)
	if want := git(t, ws.Dir, "rev-parse", "HEAD"); before.Head != want || before.Ref != "main" {
		t.Fatalf("head %q ref %q, want %s on main", before.Head, before.Ref, want)
	}
	// git's own bookkeeping (a gc packing the refs) changes nothing.
	git(t, ws.Dir, "pack-refs", "--all")
	git(t, ws.Dir, "gc", "-q")
	if c := changes(t, before, fingerprint(t, tb, ws)); !c.Empty() {
		t.Fatalf("changes after gc %+v, want none", c)
	}
	// A commit of the same files moves HEAD.
	git(t, ws.Dir, "commit", "-q", "--allow-empty", "-m", "two")
	c := changes(t, before, fingerprint(t, tb, ws))
	if len(c.Files) != 0 || !strings.HasPrefix(c.Words(5), "HEAD moved from "+before.Head[:7]+" to ") {
		t.Fatalf("changes %+v (%q), want HEAD moved", c, c.Words(5))
	}
	// A new branch is named.
	git(t, ws.Dir, "checkout", "-q", "-b", "topic")
	if got := changes(t, before, fingerprint(t, tb, ws)).Words(5); got != "the branch changed from main to topic" {
		t.Fatalf("words %q", got)
	}
}

// BenchmarkFingerprint fingerprints a workspace of 2,000 files of 2 KiB each in 100
// directories (4 MiB), a mid-sized source tree.
func BenchmarkFingerprint(b *testing.B) {
	files := map[string]string{}
	body := strings.Repeat("x", 2040) + "\n"
	for i := range 2000 {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%100, i)] = fmt.Sprintf("%06d\n", i) + body
	}
	ws := testWS(b, files)
	tb := New(Config{})
	b.ResetTimer()
	var tree *plan.Tree
	for b.Loop() {
		tree = fingerprint(b, tb, ws)
	}
	b.ReportMetric(float64(len(tree.Packed)), "packed-bytes")
}

// With a baselines directory, a fingerprint keeps text contents, and LinesChanged counts
// lines added plus removed per path: a new file all its lines, a removed one all of its,
// an edit the lines it touched; binary files count none.
func TestLinesChanged(t *testing.T) {
	ws := testWS(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "x\ny\n", "bin": "\x00\x01\x02"})
	tb := New(Config{Baselines: filepath.Join(t.TempDir(), "baselines")})
	before := fingerprint(t, tb, ws)
	writeTree(t, ws.Dir, map[string]string{"a.txt": "one\n2\nthree\nfour\n", "new.txt": "n1\nn2\nn3\n", "bin": "\x00\x09"})
	if err := os.Remove(filepath.Join(ws.Dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	after := fingerprint(t, tb, ws)
	c := changes(t, before, after)
	n, err := tb.LinesChanged(context.Background(), before, after, c.Paths())
	if err != nil {
		t.Fatal(err)
	}
	// a.txt: -two +2 +four = 3; gone.txt: 2; new.txt: 3; bin: 0.
	if len(c.Files) != 4 || n != 8 {
		t.Fatalf("%d files, %d lines changed, want 4 and 8 (%+v)", len(c.Files), n, c)
	}
	if _, err := New(Config{}).LinesChanged(context.Background(), before, after, c.Paths()); err == nil {
		t.Error("LinesChanged without a baselines directory: no error")
	}
}
