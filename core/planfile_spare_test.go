//go:build linux

package core

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// writeOrFail writes data to plans/session/name through pf.
func writeOrFail(t *testing.T, pf *planFiles, plans, session, name string, data []byte) {
	t.Helper()
	if _, err := pf.write(plans, session, name, data); err != nil {
		t.Fatalf("writing %s/%s: %v", session, name, err)
	}
}

func checkCreated(t *testing.T, pf *planFiles, want int64) {
	t.Helper()
	if got := pf.created.Load(); got != want {
		t.Errorf("%d writes created %d files, want %d", pf.writes.Load(), got, want)
	}
}

// A rewrite fills the file the previous rewrite displaced instead of creating one, for
// any session under the plans directory, and leaves only the spare beside the plan files.
func TestWritePlanFileReusesTheDisplacedFile(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var pf planFiles
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v1, a longer first rendering\n"))
	writeOrFail(t, &pf, plans, "b", "q.md", []byte("b v1\n"))
	checkCreated(t, &pf, 2) // new files
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v2\n"))
	checkCreated(t, &pf, 3) // no spare yet: a's v1 becomes it
	checkFile(t, filepath.Join(plans, ".plangate-spare"), []byte("a v1, a longer first rendering\n"))
	writeOrFail(t, &pf, plans, "b", "q.md", []byte("b v2\n"))
	writeOrFail(t, &pf, plans, "a", "p.md", []byte("a v3\n"))
	checkCreated(t, &pf, 3)
	checkFile(t, filepath.Join(plans, "a", "p.md"), []byte("a v3\n")) // the spare was longer: cut
	checkFile(t, filepath.Join(plans, "b", "q.md"), []byte("b v2\n"))
	for dir, want := range map[string]int{plans: 3, filepath.Join(plans, "a"): 1, filepath.Join(plans, "b"): 1} {
		if entries, _ := os.ReadDir(dir); len(entries) != want {
			t.Errorf("%s holds %v, want %d entries", dir, entries, want)
		}
	}
}

// A reader that opened the plan file before a rewrite still reads the version it opened,
// whole, however many rewrites follow: a file someone holds open is never refilled.
func TestWritePlanFileNeverRefillsAnOpenFile(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var pf planFiles
	path := filepath.Join(plans, "s", "p.md")
	writeOrFail(t, &pf, plans, "s", "p.md", []byte("v1\n"))
	writeOrFail(t, &pf, plans, "s", "p.md", []byte("v2\n")) // v1 is now the spare
	r, err := os.Open(path)                                 // holds v2
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 3; i <= 6; i++ {
		writeOrFail(t, &pf, plans, "s", "p.md", fmt.Appendf(nil, "v%d, rewritten\n", i))
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "v2\n" {
		t.Errorf("the open file reads %q after the rewrites, want %q", got, "v2\n")
	}
	checkFile(t, path, []byte("v6, rewritten\n"))
	// v3 reused v1; v4 found the reader's v2 as the spare, let it go and created a file;
	// v5 and v6 reused.
	checkCreated(t, &pf, 3)
}

// Whatever sits under the spare's name is never written through: a symbolic link out of
// the plans directory, a file linked elsewhere, a directory or a FIFO is left alone or
// removed, and the write goes into a new file.
func TestWritePlanFileDistrustsTheSpare(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside.md")
	plant := map[string]func(spare string) error{
		"symlink out": func(spare string) error { return os.Symlink(outside, spare) },
		"hard link":   func(spare string) error { return os.Link(outside, spare) },
		"directory":   func(spare string) error { return os.Mkdir(spare, 0o755) },
		"fifo":        func(spare string) error { return mkfifo(spare) },
		"mode 0400":   func(spare string) error { return os.WriteFile(spare, []byte("x"), 0o400) },
	}
	for what, f := range plant {
		t.Run(what, func(t *testing.T) {
			plans := filepath.Join(base, what)
			if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			var pf planFiles
			writeOrFail(t, &pf, plans, "s", "p.md", []byte("v1\n"))
			if err := f(filepath.Join(plans, ".plangate-spare")); err != nil {
				t.Fatal(err)
			}
			writeOrFail(t, &pf, plans, "s", "p.md", []byte("v2\n"))
			checkFile(t, filepath.Join(plans, "s", "p.md"), []byte("v2\n"))
			if got, _ := os.ReadFile(outside); string(got) != "keep" {
				t.Errorf("the planted spare's target now reads %q", got)
			}
			if entries, _ := os.ReadDir(filepath.Join(plans, "s")); len(entries) != 1 {
				t.Errorf("the session directory holds %v, want only the plan file", entries)
			}
		})
	}
}

// A directory by the plan file's name stays in place, and the write fails, as a rename
// onto it does.
func TestWritePlanFileOntoADirectory(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var pf planFiles
	writeOrFail(t, &pf, plans, "s", "other.md", []byte("o1\n"))
	writeOrFail(t, &pf, plans, "s", "other.md", []byte("o2\n")) // a spare exists
	if err := os.Mkdir(filepath.Join(plans, "s", "p.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := pf.write(plans, "s", "p.md", []byte("v1\n")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if fi, err := os.Stat(filepath.Join(plans, "s", "p.md")); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone (%v, %v)", fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(plans, "s")); len(entries) != 2 {
		t.Errorf("the session directory holds %v, want the directory and other.md", entries)
	}
}

// Where leases are refused, every write creates its file.
func TestWritePlanFileWithoutLeases(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var pf planFiles
	pf.noLeases.Store(true)
	for i := range 3 {
		writeOrFail(t, &pf, plans, "s", "p.md", fmt.Appendf(nil, "v%d\n", i))
	}
	checkCreated(t, &pf, 3)
	checkFile(t, filepath.Join(plans, "s", "p.md"), []byte("v2\n"))
}

// Writers racing on one plans directory (two engines, a prepare beside the file writer)
// and readers reading all along: every read is one whole version, and every file ends
// with the last version its writer wrote.
func TestWritePlanFileConcurrent(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	var a, b planFiles
	const rounds = 200
	version := func(file string, i int) []byte {
		return bytes.Repeat(fmt.Appendf(nil, "%s v%04d\n", file, i), 1+i%40)
	}
	writeOrFail(t, &a, plans, "s", "shared.md", version("shared", 0))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // a reader of the file both writers rewrite
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(filepath.Join(plans, "s", "shared.md"))
			if err != nil {
				t.Errorf("reading: %v", err)
				return
			}
			if !wholeVersion(got, "shared") {
				t.Errorf("a reader saw a torn file: %q", got)
				return
			}
		}
	})
	var writers sync.WaitGroup
	for w, pf := range []*planFiles{&a, &b} {
		own := fmt.Sprintf("own-%d", w)
		writers.Go(func() {
			for i := 1; i <= rounds; i++ {
				writeOrFail(t, pf, plans, "s", "shared.md", version("shared", i))
				writeOrFail(t, pf, plans, fmt.Sprintf("s%d", i%3), own+".md", version(own, i))
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	for w := range 2 {
		own := fmt.Sprintf("own-%d", w)
		checkFile(t, filepath.Join(plans, fmt.Sprintf("s%d", rounds%3), own+".md"), version(own, rounds))
	}
	checkFile(t, filepath.Join(plans, "s", "shared.md"), version("shared", rounds))
}

// wholeVersion reports whether b is some version(file, i): one line repeated whole.
func wholeVersion(b []byte, file string) bool {
	line, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok || !bytes.HasPrefix(line, []byte(file+" v")) {
		return false
	}
	unit := append(bytes.Clone(line), '\n')
	return len(b)%len(unit) == 0 && bytes.Equal(b, bytes.Repeat(unit, len(b)/len(unit)))
}

// BenchmarkWritePlanFile rewrites 2 KB plan files in 64 session directories in turn:
// spare fills the displaced file, create makes a new one per write (as without leases,
// and as every write did before).
func BenchmarkWritePlanFile(b *testing.B) {
	data := bytes.Repeat([]byte("- [ ] a step of the plan, escaped and rendered\n"), 44)
	for _, mode := range []string{"spare", "create"} {
		b.Run(mode, func(b *testing.B) {
			plans := filepath.Join(b.TempDir(), "plans")
			var pf planFiles
			pf.noLeases.Store(mode == "create")
			for i := range 64 {
				if _, err := pf.write(plans, fmt.Sprint(i), "p.md", data); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := pf.write(plans, fmt.Sprint(i%64), "p.md", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
