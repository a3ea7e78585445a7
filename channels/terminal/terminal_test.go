package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// syncBuffer is an output that a concurrent Send and a test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var clock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newTest(t *testing.T, cfg Config, in io.Reader) (*Channel, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	c := New(cfg, in, out, nil)
	c.now = func() time.Time { return clock }
	return c, out
}

func TestRunPipedInput(t *testing.T) {
	input := strings.Join([]string{
		"hello",
		"",
		"   ",
		"!alice /plan accept",
		"!carol\t  hi there",
		"!",
		"!bob",
		"!bob    ",
		"! nobody",
		"fail me",
		"  last line  \r",
	}, "\n")
	c, out := newTest(t, Config{Session: "demo"}, strings.NewReader(input))

	var got []core.Message
	h := channels.HandlerFunc(func(ctx context.Context, m core.Message) error {
		got = append(got, m)
		switch m.Text {
		case "hello":
			if _, err := c.Send(ctx, core.Reply{To: m.Address, Text: "Hi " + m.Sender.Name + "."}); err != nil {
				return err
			}
		case "fail me":
			return errors.New("engine exploded:\nstore locked")
		case "last line":
			// Run must wait for this to finish before it returns.
			time.Sleep(30 * time.Millisecond)
			_, err := c.Send(ctx, core.Reply{To: m.Address, Text: "Last reply."})
			return err
		}
		return nil
	})
	if err := c.Run(context.Background(), h); err != nil {
		t.Fatalf("Run: %v", err)
	}

	wantAddr := core.Address{Channel: "terminal", Account: "local", Chat: "demo"}
	want := []struct{ sender, text string }{
		{"local", "hello"},
		{"alice", "/plan accept"},
		{"carol", "hi there"},
		{"local", "fail me"},
		{"local", "last line"},
	}
	if len(got) != len(want) {
		t.Fatalf("handled %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		m := got[i]
		if m.Text != w.text || m.Sender.ID != w.sender || m.Sender.Name != w.sender {
			t.Errorf("message %d: %q from %q/%q, want %q from %q", i+1, m.Text, m.Sender.ID, m.Sender.Name, w.text, w.sender)
		}
		if m.Address != wantAddr || m.ID != "" || !m.Time.Equal(clock) || !m.Mentioned {
			t.Errorf("message %d: %+v", i+1, m)
		}
	}

	hint := "To speak as someone else for one line: !name <message>, e.g. !alice /plan accept\n"
	wantOut := "Hi local.\n\n" + hint + hint + hint + hint +
		"error: engine exploded: store locked\n" +
		"Last reply.\n\n"
	if got := out.String(); got != wantOut {
		t.Fatalf("output\n got %q\nwant %q", got, wantOut)
	}
}

func TestDefaults(t *testing.T) {
	c, _ := newTest(t, Config{}, strings.NewReader("hi\n"))
	var m core.Message
	err := c.Run(context.Background(), channels.HandlerFunc(func(_ context.Context, got core.Message) error {
		m = got
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if m.Address.Chat != "main" || m.Sender.ID != "local" || c.Name() != "terminal" {
		t.Fatalf("defaults: %+v, name %q", m, c.Name())
	}
}

func TestRunInputErrors(t *testing.T) {
	nop := channels.HandlerFunc(func(context.Context, core.Message) error { return nil })
	tests := []struct {
		name string
		in   io.Reader
		want string
	}{
		{"read error", iotest.ErrReader(errors.New("disk gone")), "disk gone"},
		{"line too long", strings.NewReader(strings.Repeat("x", maxLine+1)), "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTest(t, Config{}, tt.in)
			err := c.Run(context.Background(), nop)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "reading terminal input") {
				t.Fatalf("Run: %v, want a reading error containing %q", err, tt.want)
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	c, _ := newTest(t, Config{}, pr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, channels.HandlerFunc(func(context.Context, core.Message) error { return nil }))
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run blocked on input after its context ended")
	}
}

func TestPromptOnlyWhenInteractive(t *testing.T) {
	// /dev/null is a character device, as a terminal is.
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer devnull.Close()
	nop := channels.HandlerFunc(func(context.Context, core.Message) error { return nil })

	c, out := newTest(t, Config{}, devnull)
	if err := c.Run(context.Background(), nop); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "> \n" {
		t.Fatalf("interactive output %q, want a prompt and a newline at end of input", got)
	}

	c, out = newTest(t, Config{}, strings.NewReader("a\nb\n"))
	if err := c.Run(context.Background(), nop); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "" {
		t.Fatalf("piped output %q, want no prompts", got)
	}
}

func TestSendFormat(t *testing.T) {
	c, out := newTest(t, Config{}, strings.NewReader(""))
	ctx := context.Background()
	replies := []core.Reply{
		{
			Kind: core.ReplyPlan,
			Text: "Plan v1 — Docs cleanup (2 steps)\n**Reword** the README.",
			Buttons: []core.Button{
				{Label: "Accept", Action: core.Action{Kind: core.ActionAccept}},
				{Label: "Revise", Action: core.Action{Kind: core.ActionRevise}},
				{Label: "Auto", Action: core.Action{Kind: core.ActionAuto}},
			},
		},
		{Text: "ends with newline\n"},
		{Attachments: []core.File{{Name: "a.md", Path: "plans/main/a.md"}}},
	}
	for i, r := range replies {
		id, err := c.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("t%d", i+1); id != want {
			t.Errorf("id %q, want %q", id, want)
		}
	}
	if err := c.Edit(ctx, "t2", core.Reply{Text: "[x] step one"}); err != nil {
		t.Fatal(err)
	}
	want := "Plan v1 — Docs cleanup (2 steps)\n**Reword** the README.\n\n" + // buttons are not printed
		"ends with newline\n\n" +
		"[attachment] plans/main/a.md\n\n" +
		"[x] step one\n\n"
	if got := out.String(); got != want {
		t.Fatalf("output\n got %q\nwant %q", got, want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Send(cancelled, core.Reply{Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context: %v", err)
	}
}

func TestSendAttachments(t *testing.T) {
	wd := t.TempDir()
	outside := t.TempDir()
	dir := filepath.Join(wd, "attachments")
	tests := []struct {
		name     string
		cfg      Config
		file     core.File
		wantLine string
		wantErr  string
		wantFile string // path, relative to wd, that must hold the data
	}{
		{
			name:     "path inside the working directory",
			file:     core.File{Name: "p.md", Path: filepath.Join(wd, "plans", "main", "p.md")},
			wantLine: "[attachment] " + filepath.Join("plans", "main", "p.md"),
		},
		{
			name:     "path outside the working directory",
			file:     core.File{Name: "p.md", Path: filepath.Join(outside, "p.md")},
			wantLine: "[attachment] " + filepath.Join(outside, "p.md"),
		},
		{
			name:     "relative path as given",
			file:     core.File{Name: "p.md", Path: "../x/p.md"},
			wantLine: "[attachment] ../x/p.md",
		},
		{
			name:     "data saved",
			cfg:      Config{AttachmentsDir: dir},
			file:     core.File{Name: "plan-v1.md", Data: []byte("# Plan\n")},
			wantLine: "[attachment] " + filepath.Join("attachments", "plan-v1.md"),
			wantFile: filepath.Join("attachments", "plan-v1.md"),
		},
		{
			name:     "data saved in a sub-directory",
			cfg:      Config{AttachmentsDir: dir},
			file:     core.File{Name: "main/plan-v2.md", Data: []byte("# Plan 2\n")},
			wantLine: "[attachment] " + filepath.Join("attachments", "main", "plan-v2.md"),
			wantFile: filepath.Join("attachments", "main", "plan-v2.md"),
		},
		{
			name:     "relative attachments dir printed as given",
			cfg:      Config{AttachmentsDir: "rel-dir"},
			file:     core.File{Name: "r.md", Data: []byte("r")},
			wantLine: "[attachment] " + filepath.Join("rel-dir", "r.md"),
			wantFile: filepath.Join("rel-dir", "r.md"),
		},
		{
			name:     "name escaping the directory refused",
			cfg:      Config{AttachmentsDir: dir},
			file:     core.File{Name: "../escaped.md", Data: []byte("evil")},
			wantLine: "[attachment] ../escaped.md (not saved: the name leads outside the attachments directory)",
			wantErr:  `saving attachment "../escaped.md"`,
		},
		{
			name:     "absolute name refused",
			cfg:      Config{AttachmentsDir: dir},
			file:     core.File{Name: filepath.Join(outside, "abs.md"), Data: []byte("evil")},
			wantLine: "[attachment] " + filepath.Join(outside, "abs.md") + " (not saved: the name leads outside the attachments directory)",
			wantErr:  "saving attachment",
		},
		{
			name:     "no directory configured",
			file:     core.File{Name: "n.md", Data: []byte("n")},
			wantLine: "[attachment] n.md (not saved: no attachments directory configured)",
			wantErr:  "no attachments directory configured",
		},
	}
	t.Chdir(wd)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, out := newTest(t, tt.cfg, strings.NewReader(""))
			id, err := c.Send(context.Background(), core.Reply{Text: "Plan v1", Attachments: []core.File{tt.file}})
			if id == "" {
				t.Error("no id even though the text was printed")
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Send: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Send: %v, want an error containing %q", err, tt.wantErr)
			}
			got := out.String()
			if !strings.HasPrefix(got, "Plan v1\n"+tt.wantLine) || !strings.HasSuffix(got, "\n\n") {
				t.Fatalf("output %q, want the text then %q", got, tt.wantLine)
			}
			if tt.wantFile != "" {
				data, err := os.ReadFile(filepath.Join(wd, tt.wantFile))
				if err != nil || !bytes.Equal(data, tt.file.Data) {
					t.Fatalf("saved file: %q, %v", data, err)
				}
			}
		})
	}
	for _, p := range []string{filepath.Join(wd, "escaped.md"), filepath.Join(outside, "abs.md")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (or stat failed: %v): a name escaped the attachments directory", p, err)
		}
	}
}

func TestConcurrentSend(t *testing.T) {
	c, out := newTest(t, Config{}, strings.NewReader(""))
	const n = 50
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			text := fmt.Sprintf("reply %d line one\nreply %d line two", i, i)
			id, err := c.Send(context.Background(), core.Reply{Text: text})
			if err != nil {
				t.Error(err)
			}
			ids <- id
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("id %q returned twice", id)
		}
		seen[id] = true
	}
	got := out.String()
	for i := range n {
		block := fmt.Sprintf("reply %d line one\nreply %d line two\n\n", i, i)
		if !strings.Contains(got, block) {
			t.Errorf("reply %d interleaved or missing", i)
		}
	}
	if len(seen) != n || !seen["t1"] || !seen[fmt.Sprintf("t%d", n)] {
		t.Errorf("ids %v, want t1..t%d", seen, n)
	}
}

func TestConformance(t *testing.T) {
	channeltest.RunConformance(t, func(t *testing.T) channeltest.Harness {
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		out := &syncBuffer{}
		c := New(Config{Session: "conf"}, pr, out, nil)
		return channeltest.Harness{
			Channel: c,
			Address: c.Address(),
			Inject: func(_ context.Context, sender, text string) error {
				_, err := fmt.Fprintf(pw, "!%s %s\n", sender, text)
				return err
			},
			Shown: func() []string { return []string{out.String()} },
		}
	})
}

func TestSendAttachmentSymlinkEscape(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Skip(err)
	}
	c, out := newTest(t, Config{AttachmentsDir: dir}, strings.NewReader(""))
	_, err := c.Send(context.Background(), core.Reply{Attachments: []core.File{{Name: "link/x.md", Data: []byte("evil")}}})
	if err == nil {
		t.Fatalf("saving through a symbolic link out of the directory succeeded; output %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(outside, "x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file written outside the attachments directory (stat: %v)", err)
	}
	if !strings.Contains(out.String(), "[attachment] link/x.md (not saved: ") {
		t.Fatalf("output %q", out.String())
	}
}

func TestPlainTextUnescapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[ ] Edit docs/\*.md`, `[ ] Edit docs/*.md`},
		{`\# not a heading`, `# not a heading`},
		{`a \\ b`, `a \ b`},
		{`C:\path`, `C:\path`},
		{`trailing \`, `trailing \`},
		{`plain`, `plain`},
	} {
		if got := plainText(tc.in); got != tc.want {
			t.Errorf("plainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
