package terminal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// /plan edit PATH hands the engine the file's bytes, or only its size when it is over the
// limit; a path that is not a readable file is answered here and reaches no one.
func TestPlanEditReadsTheFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "plan.md")
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(small, []byte("# Plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), plan.MaxFileBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{"/plan edit " + small, "/plan edit " + big, "/plan edit " + filepath.Join(dir, "nope.md"), "/plan edit " + dir}, "\n")
	var out bytes.Buffer
	c := New(Config{}, strings.NewReader(in), &out, nil)
	var got []core.Message
	err := c.Run(context.Background(), channels.HandlerFunc(func(_ context.Context, m core.Message) error {
		got = append(got, m)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d messages reached the engine, want 2: %+v", len(got), got)
	}
	if f := got[0].Attachments; len(f) != 1 || string(f[0].Data) != "# Plan\n" || f[0].Name != "plan.md" || got[0].Text != "/plan edit "+small {
		t.Errorf("small file: %+v", got[0])
	}
	if f := got[1].Attachments; len(f) != 1 || f[0].Data != nil || f[0].Size != plan.MaxFileBytes+10 {
		t.Errorf("big file: data %d bytes, size %d", len(f[0].Data), f[0].Size)
	}
	for _, want := range []string{"There is no file " + filepath.Join(dir, "nope.md") + ". Nothing changed.", dir + " is a directory"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// /plan edit on a FIFO or a device (even behind a .md name) is refused without blocking:
// opening a FIFO with no writer, or reading a terminal, would hang the operator's console.
func TestPlanEditRefusesFIFOAndDevices(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.md")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	dev := filepath.Join(dir, "zero.md")
	if err := os.Symlink("/dev/zero", dev); err != nil {
		t.Fatal(err)
	}
	c := New(Config{}, strings.NewReader(""), &bytes.Buffer{}, nil)
	for _, p := range []string{fifo, dev} {
		done := make(chan string, 1)
		go func() {
			f, problem, ok := c.editFile(context.Background(), "/plan edit "+p)
			if !ok || f.Data != nil {
				problem = "handed on"
			}
			done <- problem
		}()
		select {
		case problem := <-done:
			if !strings.Contains(problem, "is not a regular file") {
				t.Errorf("%s: problem %q", p, problem)
			}
		case <-time.After(20 * time.Second): // a deadlock guard, not a timing assertion
			unblockFIFO(fifo)
			t.Fatalf("/plan edit %s hung", p)
		}
	}
}
