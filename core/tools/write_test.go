package tools

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	cases := []struct {
		name    string
		args    map[string]any
		out     string
		file    string // path to read back; "" = nothing written
		content string
		wantErr []string
	}{
		{name: "creates parents", args: map[string]any{"path": "docs/new/CHANGELOG.md", "content": "# Changes\n- one\n"},
			out: "created docs/new/CHANGELOG.md (16 bytes, 2 lines)", file: "docs/new/CHANGELOG.md", content: "# Changes\n- one\n"},
		{name: "overwrites", args: map[string]any{"path": "README.md", "content": "new"},
			out: "overwrote README.md (3 bytes, 1 line)", file: "README.md", content: "new"},
		{name: "empty file", args: map[string]any{"path": "./empty.txt", "content": ""},
			out: "created empty.txt (0 bytes, 0 lines)", file: "empty.txt", content: ""},
		{name: "a directory", args: map[string]any{"path": "docs", "content": "x"}, wantErr: []string{"docs is a directory"}},
		{name: "the root", args: map[string]any{"path": ".", "content": "x"}, wantErr: []string{"needs a file path"}},
		{name: "under a file", args: map[string]any{"path": "README.md/x", "content": "x"}, wantErr: []string{"README.md", "not a directory"}},
		{name: "into .git", args: map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, wantErr: []string{"refuses paths inside .git"}},
		{name: "into a nested .git", args: map[string]any{"path": "sub/.git/config", "content": "x"}, wantErr: []string{"refuses paths inside .git"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := testWS(t, map[string]string{"README.md": "old\n", "docs/": ""})
			out, err := call(t, New(Config{}), ws, ToolWriteFile, c.args)
			if c.wantErr != nil {
				wantErr(t, err, c.wantErr...)
				if got := readBack(t, ws, "README.md"); got != "old\n" {
					t.Errorf("README.md = %q after a refused write", got)
				}
				if _, err := os.Stat(filepath.Join(ws.Dir, ".git")); err == nil {
					t.Error(".git was created")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != c.out {
				t.Errorf("output %q, want %q", out, c.out)
			}
			if got := readBack(t, ws, c.file); got != c.content {
				t.Errorf("%s = %q, want %q", c.file, got, c.content)
			}
		})
	}
}

func TestEditFile(t *testing.T) {
	const readme = "# Title\n\nThis is teh intro.\nSee teh guide.\nSee teh FAQ.\n"
	cases := []struct {
		name    string
		file    string
		args    map[string]any
		out     string
		after   string
		wantErr []string
	}{
		{name: "success", args: map[string]any{"path": "README.md", "old": "This is teh intro.", "new": "This is the intro."},
			out: "edited README.md: replaced line 3 with line 3", after: "# Title\n\nThis is the intro.\nSee teh guide.\nSee teh FAQ.\n"},
		{name: "multi-line", args: map[string]any{"path": "README.md", "old": "See teh guide.\nSee teh FAQ.\n", "new": "See the guide.\n"},
			out: "edited README.md: replaced lines 4-5 with line 4", after: "# Title\n\nThis is teh intro.\nSee the guide.\n"},
		{name: "delete", args: map[string]any{"path": "README.md", "old": "\nThis is teh intro.", "new": ""},
			out: "edited README.md: removed lines 2-3", after: "# Title\n\nSee teh guide.\nSee teh FAQ.\n"},
		{name: "not found", args: map[string]any{"path": "README.md", "old": "the intro", "new": "x"},
			wantErr: []string{"old text not found in README.md", "read_file it again"}},
		{name: "ambiguous", args: map[string]any{"path": "README.md", "old": "teh", "new": "the"},
			wantErr: []string{"old text found 3 times in README.md (lines 3, 4, 5)", "include more surrounding lines"}},
		{name: "whitespace hint", args: map[string]any{"path": "README.md", "old": "  See teh FAQ.  ", "new": "x"},
			wantErr: []string{"leading and trailing whitespace"}},
		{name: "line number hint", args: map[string]any{"path": "README.md", "old": "     3\tThis is teh intro.", "new": "x"},
			wantErr: []string{"line numbers"}},
		{name: "crlf hint", file: "a\r\nb\r\n", args: map[string]any{"path": "README.md", "old": "a\nb", "new": "x"},
			wantErr: []string{"CRLF"}},
		{name: "empty old", args: map[string]any{"path": "README.md", "old": "", "new": "x"}, wantErr: []string{"old must not be empty"}},
		{name: "no change", args: map[string]any{"path": "README.md", "old": "teh", "new": "teh"}, wantErr: []string{"nothing would change"}},
		{name: "missing file", args: map[string]any{"path": "nope.md", "old": "a", "new": "b"}, wantErr: []string{"nope.md does not exist"}},
		{name: "binary", file: "a\x00teh", args: map[string]any{"path": "README.md", "old": "teh", "new": "the"}, wantErr: []string{"binary file"}},
		{name: "a directory", args: map[string]any{"path": "docs", "old": "a", "new": "b"}, wantErr: []string{"docs is a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := readme
			if c.file != "" {
				before = c.file
			}
			ws := testWS(t, map[string]string{"README.md": before, "docs/": ""})
			out, err := call(t, New(Config{}), ws, ToolEditFile, c.args)
			if c.wantErr != nil {
				wantErr(t, err, c.wantErr...)
				if got := readBack(t, ws, "README.md"); got != before {
					t.Errorf("README.md changed by a refused edit: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != c.out {
				t.Errorf("output %q, want %q", out, c.out)
			}
			if got := readBack(t, ws, "README.md"); got != c.after {
				t.Errorf("README.md =\n%q\nwant\n%q", got, c.after)
			}
		})
	}
}

func TestEditKeepsMode(t *testing.T) {
	ws := testWS(t, map[string]string{"run.sh": "echo hi\n"})
	p := filepath.Join(ws.Dir, "run.sh")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, New(Config{}), ws, ToolEditFile, map[string]any{"path": "run.sh", "old": "hi", "new": "ho"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v after edit, want 0755 kept", fi.Mode().Perm())
	}
}
