package tools

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\tline %d\n", i, i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	var ten strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "line %d\n", i)
	}
	long := strings.Repeat("é", maxLineBytes) // 2 bytes a rune: the cut lands mid-rune
	ws := testWS(t, map[string]string{
		"ten.txt":     ten.String(),
		"empty.txt":   "",
		"noeol.txt":   "a\nb",
		"crlf.txt":    "a\r\nb\r\n",
		"bin.dat":     "PK\x03\x04\x00\x00binary",
		"long.txt":    long + "\nnext\n",
		"docs/":       "",
		"bad-utf8.md": "ok \xff\xfe\n",
		"mixed.txt":   "a\n" + strings.Repeat("x", 40000) + "\nb",
	})
	cases := []struct {
		name      string
		args      map[string]any
		maxOutput int
		want      string   // exact output, when set
		contains  []string // pieces of the output
		wantErr   []string
	}{
		{name: "whole file", args: map[string]any{"path": "ten.txt"}, want: numbered(1, 10)},
		{name: "offset and limit", args: map[string]any{"path": "ten.txt", "offset": 3, "limit": 2},
			want: numbered(3, 4) + "(showing lines 3-4 of 10; read_file with offset 5 reads on)\n"},
		{name: "offset to the end", args: map[string]any{"path": "ten.txt", "offset": 9},
			want: numbered(9, 10) + "(showing lines 9-10 of 10)\n"},
		{name: "limit only", args: map[string]any{"path": "ten.txt", "limit": 1},
			want: numbered(1, 1) + "(showing lines 1-1 of 10; read_file with offset 2 reads on)\n"},
		{name: "output cap", args: map[string]any{"path": "ten.txt"}, maxOutput: 40,
			want: numbered(1, 2) + "(showing lines 1-2 of 10; read_file with offset 3 reads on)\n"},
		{name: "offset past the end", args: map[string]any{"path": "ten.txt", "offset": 11},
			wantErr: []string{"offset 11 is past the end of ten.txt, which has 10 lines"}},
		{name: "negative offset", args: map[string]any{"path": "ten.txt", "offset": -1}, wantErr: []string{"must be positive"}},
		{name: "negative limit", args: map[string]any{"path": "ten.txt", "limit": -5}, wantErr: []string{"must be positive"}},
		{name: "rest counted past a long line and a last line without newline", args: map[string]any{"path": "mixed.txt", "limit": 1},
			want: "     1\ta\n(showing lines 1-1 of 3; read_file with offset 2 reads on)\n"},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, want: "(empty.txt is empty)"},
		{name: "no final newline", args: map[string]any{"path": "noeol.txt"}, want: "     1\ta\n     2\tb\n"},
		{name: "crlf", args: map[string]any{"path": "crlf.txt"},
			want: "     1\ta\n     2\tb\n(this file uses CRLF line endings; the \\r is not shown)\n"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, wantErr: []string{"bin.dat is a binary file (12 bytes)", "text files only"}},
		{name: "long line cut", args: map[string]any{"path": "long.txt"},
			contains: []string{"(line cut at 2000 bytes)", "     2\tnext\n"}},
		{name: "invalid utf-8 shown safely", args: map[string]any{"path": "bad-utf8.md"}, want: "     1\tok \uFFFD\n"},
		{name: "directory", args: map[string]any{"path": "docs"}, wantErr: []string{"docs is a directory", "list_files"}},
		{name: "missing", args: map[string]any{"path": "nope.md"}, wantErr: []string{"nope.md does not exist", "list_files"}},
		{name: "through a file", args: map[string]any{"path": "ten.txt/x"}, wantErr: []string{"ten.txt/x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := New(Config{MaxOutput: c.maxOutput})
			out, err := call(t, tb, ws, ToolReadFile, c.args)
			if c.wantErr != nil {
				wantErr(t, err, c.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want != "" && out != c.want {
				t.Fatalf("output\n%q\nwant\n%q", out, c.want)
			}
			wantContains(t, "output", out, c.contains...)
		})
	}
}

func TestReadFileLongLineKeepsValidUTF8(t *testing.T) {
	ws := testWS(t, map[string]string{"long.txt": strings.Repeat("é", maxLineBytes)})
	out, err := call(t, New(Config{}), ws, ToolReadFile, map[string]any{"path": "long.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(out, '\uFFFD') {
		t.Errorf("cutting a long line split a rune: %q", out[len(out)-60:])
	}
	if want := strings.Repeat("é", maxLineBytes/2) + " … (line cut"; !strings.Contains(out, want) {
		t.Errorf("the cut line does not keep the first %d bytes", maxLineBytes)
	}
}

func TestListFiles(t *testing.T) {
	ws := testWS(t, map[string]string{
		"README.md":       "",
		".gitignore":      "",
		".git/config":     "",
		".git/HEAD":       "",
		"docs/guide.md":   "",
		"docs/faq.md":     "",
		"docs/img/a.png":  "",
		"src/a/b/c/d.go":  "",
		"src/main.go":     "",
		"sub/.git/config": "", // a nested repository's .git is hidden too
	})
	cases := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{name: "default depth 2, .git hidden, sorted", args: map[string]any{},
			want: ".gitignore\nREADME.md\ndocs/\ndocs/faq.md\ndocs/guide.md\ndocs/img/\nsrc/\nsrc/a/\nsrc/main.go\nsub/\n"},
		{name: "depth 1", args: map[string]any{"depth": 1},
			want: ".gitignore\nREADME.md\ndocs/\nsrc/\nsub/\n"},
		{name: "deep", args: map[string]any{"path": "src", "depth": 9},
			want: "src/a/\nsrc/a/b/\nsrc/a/b/c/\nsrc/a/b/c/d.go\nsrc/main.go\n"},
		{name: "pattern on names", args: map[string]any{"pattern": "*.md", "depth": 5},
			want: "README.md\ndocs/faq.md\ndocs/guide.md\n"},
		{name: "sub-directory", args: map[string]any{"path": "./docs/"},
			want: "docs/faq.md\ndocs/guide.md\ndocs/img/\ndocs/img/a.png\n"},
		{name: "a file", args: map[string]any{"path": "docs/faq.md"}, want: "docs/faq.md\n"},
		{name: "no match", args: map[string]any{"pattern": "*.rs"}, want: `no names match "*.rs" under . (depth 2)`},
		{name: "empty dir", args: map[string]any{"path": "docs/img", "pattern": "*.jpg"}, want: `no names match "*.jpg" under docs/img (depth 2)`},
		{name: "bad pattern", args: map[string]any{"pattern": "[a"}, wantErr: `pattern "[a" is not a valid glob`},
		{name: "negative depth", args: map[string]any{"depth": -1}, wantErr: "depth must be 1 or more"},
		{name: "missing", args: map[string]any{"path": "nope"}, wantErr: "nope does not exist"},
	}
	tb := New(Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := call(t, tb, ws, ToolListFiles, c.args)
			if c.wantErr != "" {
				wantErr(t, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != c.want {
				t.Fatalf("output\n%s\nwant\n%s", out, c.want)
			}
		})
	}
}

func TestListFilesCap(t *testing.T) {
	files := map[string]string{}
	for i := range maxListEntries + 50 {
		files[fmt.Sprintf("f%04d.txt", i)] = ""
	}
	ws := testWS(t, files)
	out, err := call(t, New(Config{MaxOutput: 1 << 20}), ws, ToolListFiles, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, ".txt\n"); got != maxListEntries {
		t.Errorf("listed %d entries, want the cap %d", got, maxListEntries)
	}
	wantContains(t, "output", out, "(listing stopped after 500 entries; narrow it with path, pattern or depth)")

	// The byte cap stops a listing too.
	out, err = call(t, New(Config{MaxOutput: 100}), ws, ToolListFiles, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, ".txt\n") > 12 {
		t.Errorf("a 100-byte cap listed %d entries", strings.Count(out, ".txt\n"))
	}
	wantContains(t, "output", out, "listing stopped after")
}

func TestSearchFiles(t *testing.T) {
	ws := testWS(t, map[string]string{
		"README.md":      "# Title\nTODO: write more\n",
		"docs/guide.md":  "intro\ntodo later\nTODO now\n",
		"src/main.go":    "package main // TODO(x)\n",
		".git/COMMIT":    "TODO in git\n",
		"bin/tool":       "TODO\x00binary",
		"docs/crlf.txt":  "TODO crlf\r\n",
		"docs/long.txt":  "TODO " + strings.Repeat("x", 1000) + "\n",
		"notes/a/b.md":   "TODO deep\n",
		"notes/skip.txt": "TODO skip\n",
	})
	cases := []struct {
		name     string
		args     map[string]any
		want     string
		contains []string
		wantErr  []string
	}{
		{name: "path filter", args: map[string]any{"pattern": "TODO", "path": "docs", "glob": "*.md"},
			want: "docs/guide.md:3: TODO now\n"},
		{name: "case-insensitive, glob", args: map[string]any{"pattern": "(?i)todo", "glob": "*.md"},
			want: "README.md:2: TODO: write more\ndocs/guide.md:2: todo later\ndocs/guide.md:3: TODO now\nnotes/a/b.md:1: TODO deep\n"},
		{name: "glob with a slash matches the path", args: map[string]any{"pattern": "TODO", "glob": "notes/*/*.md"},
			want: "notes/a/b.md:1: TODO deep\n"},
		{name: "one file", args: map[string]any{"pattern": "TODO", "path": "src/main.go"},
			want: "src/main.go:1: package main // TODO(x)\n"},
		{name: "git and binary skipped, crlf trimmed, long cut", args: map[string]any{"pattern": "TODO"},
			contains: []string{"docs/crlf.txt:1: TODO crlf\n", "docs/long.txt:1: TODO xxx", "x …\n", "(1 binary files skipped)"}},
		{name: "no matches", args: map[string]any{"pattern": "nothing here", "path": "docs"},
			want: `no matches for "nothing here" in docs (3 files searched)`},
		{name: "bad regexp", args: map[string]any{"pattern": "TODO("},
			wantErr: []string{`pattern "TODO(" is not a valid regular expression`, "missing closing )", "escape"}},
		{name: "empty pattern", args: map[string]any{}, wantErr: []string{"pattern is required"}},
		{name: "bad glob", args: map[string]any{"pattern": "x", "glob": "[x"}, wantErr: []string{`glob "[x" is not a valid glob`}},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "nope"}, wantErr: []string{"nope does not exist"}},
	}
	tb := New(Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := call(t, tb, ws, ToolSearchFiles, c.args)
			if c.wantErr != nil {
				wantErr(t, err, c.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want != "" && out != c.want {
				t.Fatalf("output\n%s\nwant\n%s", out, c.want)
			}
			wantContains(t, "output", out, c.contains...)
			if strings.Contains(out, ".git/") || strings.Contains(out, "bin/tool") {
				t.Errorf("search looked into .git or a binary file:\n%s", out)
			}
		})
	}
}

func TestSearchFilesCap(t *testing.T) {
	var b strings.Builder
	for i := range maxSearchMatches + 20 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	ws := testWS(t, map[string]string{"many.txt": b.String()})
	out, err := call(t, New(Config{}), ws, ToolSearchFiles, map[string]any{"pattern": "match"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, "many.txt:"); got != maxSearchMatches {
		t.Errorf("%d matches shown, want the cap %d", got, maxSearchMatches)
	}
	wantContains(t, "output", out, "(stopped after 100 matches; narrow the search with path or glob)")

	out, err = call(t, New(Config{MaxOutput: 64}), ws, ToolSearchFiles, map[string]any{"pattern": "match"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, "many.txt:"); got == 0 || got > 4 {
		t.Errorf("a 64-byte cap showed %d matches", got)
	}
	wantContains(t, "output", out, "stopped after")
}
