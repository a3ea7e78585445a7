package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// The gitlinks of an index git wrote, in each index version git writes: the nested
// repositories added, not the files (a long name and names sharing a prefix included, as
// version 4 compresses them).
func TestGitlinksOfEveryIndexVersion(t *testing.T) {
	need(t, "git")
	ws, _ := gitRepo(t)
	writeTree(t, ws.Dir, map[string]string{"docs/a-rather-long-file-name-for-the-prefix.md": "x\n", "docs/a-rather-long-file-name-for-the-prefix2.md": "y\n"})
	for _, sub := range []string{"deps/sub-one", "deps/sub-two"} {
		dir := filepath.Join(ws.Dir, sub)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		hostGit(t, dir, "init", "-q")
		writeTree(t, dir, map[string]string{"f": "f\n"})
		hostGit(t, dir, "add", "f")
		hostGit(t, dir, "commit", "-qm", "f")
	}
	hostGit(t, ws.Dir, "add", ".")
	for _, v := range []int{2, 3, 4} {
		hostGit(t, ws.Dir, "update-index", "--index-version", strconv.Itoa(v))
		root, err := os.OpenRoot(ws.Dir)
		if err != nil {
			t.Fatal(err)
		}
		got := gitlinks(root)
		root.Close()
		if want := []string{"deps/sub-one", "deps/sub-two"}; !slices.Equal(got, want) {
			t.Errorf("index version %d: gitlinks %q, want %q", v, got, want)
		}
	}
	if got := parseGitlinks([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05short")); len(got) != 0 {
		t.Errorf("a cut index gave %q", got)
	}
}
