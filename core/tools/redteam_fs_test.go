//go:build unix

package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// The red-team tests plant hostile files in a workspace and assert on the disk: what a
// file outside the workspace contains afterwards, not what the tool said.

// outsideFile is a file next to (not inside) the workspace, on the same file system.
func outsideFile(t *testing.T, ws core.Workspace, content string) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(ws.Dir), "outside.txt")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantFile(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading %s: %v", p, err)
	}
	if string(b) != want {
		t.Errorf("%s = %q, want %q (unchanged)", p, b, want)
	}
}

// callSafely runs a call that must return promptly. The generous deadline is only a safety
// net so a regression fails instead of hanging the test binary; no test asserts on time.
func callSafely(t *testing.T, tb *Toolbox, ws core.Workspace, name string, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tb.Call(ctx, ws, name, raw)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		t.Fatalf("%s did not return: it blocks", name)
		return "", nil
	}
}

func TestRedTeamHardLink(t *testing.T) {
	const secret = "outside secret\n"
	ws := testWS(t, map[string]string{"README.md": "hello\n"})
	outside := outsideFile(t, ws, secret)
	link := filepath.Join(ws.Dir, "notes.txt")
	if err := os.Link(outside, link); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	tb := New(Config{})

	out, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": "notes.txt"})
	wantErr(t, err, "notes.txt has 2 hard links", "read_file refuses")
	if strings.Contains(out, "secret") {
		t.Errorf("read_file showed the outside file: %q", out)
	}
	out, err = call(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "secret"})
	if err != nil || strings.Contains(out, "outside secret") {
		t.Errorf("search_files through a hard link = %q, %v", out, err)
	}
	wantContains(t, "search_files", out, "1 files with more than one hard link skipped")

	_, err = call(t, tb, ws, ToolEditFile, map[string]any{"path": "notes.txt", "old": "outside", "new": "changed"})
	wantErr(t, err, "hard links", "edit_file refuses")
	wantFile(t, outside, secret)

	if _, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "notes.txt", "content": "replaced\n"}); err != nil {
		t.Fatalf("write_file over a hard link: %v", err)
	}
	wantFile(t, outside, secret) // the link was replaced, not written through
	wantFile(t, link, "replaced\n")
	var st syscall.Stat_t
	if err := syscall.Stat(outside, &st); err != nil || st.Nlink != 1 {
		t.Errorf("outside file has %d links after the write (%v), want 1", st.Nlink, err)
	}
}

func TestRedTeamSymlinks(t *testing.T) {
	const secret = "outside secret\n"
	ws := testWS(t, map[string]string{"docs/": ""})
	outside := outsideFile(t, ws, secret)
	for name, target := range map[string]string{"abs.txt": outside, "rel.txt": "../outside.txt", "docs/up": "../.."} {
		if err := os.Symlink(target, filepath.Join(ws.Dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	tb := New(Config{})
	for _, p := range []string{"abs.txt", "rel.txt", "docs/up/outside.txt"} {
		out, err := call(t, tb, ws, ToolReadFile, map[string]any{"path": p})
		if err == nil || strings.Contains(out, "secret") {
			t.Errorf("read_file %s = %q, %v; want a refusal", p, out, err)
		}
		_, err = call(t, tb, ws, ToolWriteFile, map[string]any{"path": p, "content": "pwned\n"})
		if err == nil {
			t.Errorf("write_file %s through a symlink succeeded", p)
		}
		_, err = call(t, tb, ws, ToolEditFile, map[string]any{"path": p, "old": "outside", "new": "pwned"})
		if err == nil {
			t.Errorf("edit_file %s through a symlink succeeded", p)
		}
	}
	wantFile(t, outside, secret)
	out, err := call(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "secret"})
	if err != nil || strings.Contains(out, "outside secret") {
		t.Errorf("search_files followed a symlink: %q, %v", out, err)
	}
}

func TestRedTeamFIFO(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "findme\n"})
	if err := syscall.Mkfifo(filepath.Join(ws.Dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tb := New(Config{})
	_, err := callSafely(t, tb, ws, ToolReadFile, map[string]any{"path": "pipe"})
	wantErr(t, err, "pipe is not a regular file (it is a named pipe)")
	_, err = callSafely(t, tb, ws, ToolEditFile, map[string]any{"path": "pipe", "old": "a", "new": "b"})
	wantErr(t, err, "not a regular file")
	_, err = callSafely(t, tb, ws, ToolWriteFile, map[string]any{"path": "pipe", "content": "x"})
	wantErr(t, err, "not a regular file")
	out, err := callSafely(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "findme"})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "search_files", out, "README.md:1: findme")
	out, err = callSafely(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "x", "path": "pipe"})
	if err != nil || !strings.Contains(out, "no matches") {
		t.Errorf("search_files on the pipe itself = %q, %v", out, err)
	}
	fi, err := os.Lstat(filepath.Join(ws.Dir, "pipe"))
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v, %v", fi, err)
	}
}

// readChars is the number of bytes this process has read through read(2) so far.
func readChars(t *testing.T) (int64, bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func TestRedTeamSparseFile(t *testing.T) {
	ws := testWS(t, map[string]string{})
	p := filepath.Join(ws.Dir, "huge.log")
	if err := os.WriteFile(p, []byte("first line\nsecond line\n"+strings.Repeat("text, not a binary file\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 100<<30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	tb := New(Config{})
	before, haveIO := readChars(t)
	out, err := callSafely(t, tb, ws, ToolReadFile, map[string]any{"path": "huge.log", "limit": 1})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "read_file", out, "     1\tfirst line\n", "showing lines 1-1 of more than", "107374182400 bytes, too large to count to its end", "read_file with offset 2 reads on")
	if strings.Contains(out, "second line") {
		t.Errorf("limit 1 showed more than one line: %q", out)
	}
	if after, ok := readChars(t); haveIO && ok && after-before > 64<<20 {
		t.Errorf("read_file with limit 1 read %d bytes of a sparse file", after-before)
	}
	_, err = callSafely(t, tb, ws, ToolReadFile, map[string]any{"path": "huge.log", "offset": 10_000_000, "limit": 1})
	wantErr(t, err, "offset 10000000 is beyond what read_file reads of huge.log: it stops after the first 32 MiB")
	out, err = callSafely(t, tb, ws, ToolSearchFiles, map[string]any{"pattern": "first"})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "search_files", out, "1 files over 8 MiB skipped")
	_, err = callSafely(t, tb, ws, ToolEditFile, map[string]any{"path": "huge.log", "old": "first", "new": "1st"})
	wantErr(t, err, "more than the 1048576 bytes edit_file handles")
}

func TestReadHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &budgetReader{ctx: ctx, r: strings.NewReader(strings.Repeat("x", 100)), left: 1000}
	buf := make([]byte, 10)
	if n, err := r.Read(buf); n != 10 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	cancel()
	if _, err := r.Read(buf); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel = %v, want context.Canceled", err)
	}
	r = &budgetReader{ctx: context.Background(), r: strings.NewReader(strings.Repeat("x", 100)), left: 15}
	got := 0
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		got += n
	}
	if got != 15 || !errors.Is(err, errReadBudget) {
		t.Errorf("budget 15: read %d bytes, then %v", got, err)
	}
}

func TestWriteLimits(t *testing.T) {
	ws := testWS(t, map[string]string{"README.md": "small\n"})
	tb := New(Config{MaxWriteBytes: 100})
	_, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "big.txt", "content": strings.Repeat("x", 101)})
	wantErr(t, err, "content is 101 bytes", "at most 100 bytes (tools.max_write_bytes)")
	if _, err := os.Stat(filepath.Join(ws.Dir, "big.txt")); err == nil {
		t.Error("an oversized write created the file")
	}
	if _, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "ok.txt", "content": strings.Repeat("x", 100)}); err != nil {
		t.Errorf("a write at the limit was refused: %v", err)
	}
	_, err = call(t, tb, ws, ToolEditFile, map[string]any{"path": "README.md", "old": "small", "new": strings.Repeat("y", 100)})
	wantErr(t, err, "would be 101 bytes", "at most 100 bytes")
	wantFile(t, filepath.Join(ws.Dir, "README.md"), "small\n")

	_, err = call(t, tb, ws, ToolReadFile, map[string]any{"path": strings.Repeat("a", maxArgBytes)})
	wantErr(t, err, "the arguments of read_file are", "send a smaller call")
	_, err = tb.WritePaths(ToolWriteFile, json.RawMessage(`{"path":"a","content":"`+strings.Repeat("x", 6*100+maxArgBytes)+`"}`))
	wantErr(t, err, "the arguments of write_file are")
	_, err = call(t, tb, ws, ToolListFiles, map[string]any{"path": strings.Repeat("a/", 3000)})
	wantErr(t, err, "paths have at most 4096")
}

func TestWriteIsAtomicAndLeavesNoTemporaryFile(t *testing.T) {
	ws := testWS(t, map[string]string{"run.sh": "echo hi\n"})
	if err := os.Chmod(filepath.Join(ws.Dir, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(ws.Dir, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tb := New(Config{})
	if _, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "run.sh", "content": "echo ho\n"}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(ws.Dir, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("write_file wrote into the old file instead of replacing it")
	}
	if after.Mode().Perm() != 0o750 {
		t.Errorf("mode %v after the write, want 0750 kept", after.Mode().Perm())
	}
	if _, err := call(t, tb, ws, ToolWriteFile, map[string]any{"path": "sub/new.txt", "content": "n\n"}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{ws.Dir, filepath.Join(ws.Dir, "sub")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".plangate-") {
				t.Errorf("temporary file %s left in %s", e.Name(), dir)
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(ws.Dir, "sub/new.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v, %v; want mode 0644", fi, err)
	}
}
