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

// writeOrFail writes data to plans/session/name.
func writeOrFail(t *testing.T, plans, session, name string, data []byte) {
	t.Helper()
	if _, err := WritePlanFile(plans, session, name, data); err != nil {
		t.Fatalf("writing %s/%s: %v", session, name, err)
	}
}

// A reader that opened the plan file before a rewrite still reads the version it opened,
// whole, however many rewrites follow: a rewrite never writes into a file under the name.
func TestWritePlanFileKeepsAnOpenFileWhole(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	path := filepath.Join(plans, "s", "p.md")
	writeOrFail(t, plans, "s", "p.md", []byte("v1\n"))
	writeOrFail(t, plans, "s", "p.md", []byte("v2\n"))
	r, err := os.Open(path) // holds v2
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 3; i <= 6; i++ {
		writeOrFail(t, plans, "s", "p.md", fmt.Appendf(nil, "v%d, rewritten\n", i))
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "v2\n" {
		t.Errorf("the open file reads %q after the rewrites, want %q", got, "v2\n")
	}
	checkFile(t, path, []byte("v6, rewritten\n"))
}

// A .plangate-spare in the plans directory is no plan's file and writes never touch it,
// whatever it is: a symbolic link out of the plans directory, a file linked elsewhere, a
// directory, a FIFO or a read-only file is left alone, and the plan file is written.
func TestWritePlanFileIgnoresALeftoverSpare(t *testing.T) {
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
			writeOrFail(t, plans, "s", "p.md", []byte("v1\n"))
			if err := f(filepath.Join(plans, ".plangate-spare")); err != nil {
				t.Fatal(err)
			}
			writeOrFail(t, plans, "s", "p.md", []byte("v2\n"))
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
	writeOrFail(t, plans, "s", "other.md", []byte("o1\n"))
	writeOrFail(t, plans, "s", "other.md", []byte("o2\n"))
	if err := os.Mkdir(filepath.Join(plans, "s", "p.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlanFile(plans, "s", "p.md", []byte("v1\n")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if fi, err := os.Stat(filepath.Join(plans, "s", "p.md")); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone (%v, %v)", fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(plans, "s")); len(entries) != 2 {
		t.Errorf("the session directory holds %v, want the directory and other.md", entries)
	}
}

// Writers racing on one plans directory (two engines, a prepare beside the file writer)
// and readers reading all along: every read is one whole version, and every file ends
// with the last version its writer wrote.
func TestWritePlanFileConcurrent(t *testing.T) {
	plans := filepath.Join(t.TempDir(), "plans")
	const rounds = 200
	version := func(file string, i int) []byte {
		return bytes.Repeat(fmt.Appendf(nil, "%s v%04d\n", file, i), 1+i%40)
	}
	writeOrFail(t, plans, "s", "shared.md", version("shared", 0))
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
	for w := range 2 {
		own := fmt.Sprintf("own-%d", w)
		writers.Go(func() {
			for i := 1; i <= rounds; i++ {
				writeOrFail(t, plans, "s", "shared.md", version("shared", i))
				writeOrFail(t, plans, fmt.Sprintf("s%d", i%3), own+".md", version(own, i))
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

// BenchmarkWritePlanFile rewrites 2 KB plan files in 64 session directories in turn.
func BenchmarkWritePlanFile(b *testing.B) {
	data := bytes.Repeat([]byte("- [ ] a step of the plan, escaped and rendered\n"), 44)
	plans := filepath.Join(b.TempDir(), "plans")
	for i := range 64 {
		if _, err := WritePlanFile(plans, fmt.Sprint(i), "p.md", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := WritePlanFile(plans, fmt.Sprint(i%64), "p.md", data); err != nil {
			b.Fatal(err)
		}
	}
}
