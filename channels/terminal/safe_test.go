package terminal

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

func TestNeutralize(t *testing.T) {
	tests := []struct{ name, in, want, field string }{
		{"plain", "Plan v1 — Docs", "Plan v1 — Docs", "Plan v1 — Docs"},
		{"newline and tab", "a\n\tb", "a\n\tb", `a^J^Ib`},
		{"erase line", "x\x1b[2Ky", "x^[[2Ky", "x^[[2Ky"},
		{"osc 52 clipboard", "\x1b]52;c;ZWNobyBwd25lZA==\x07", "^[]52;c;ZWNobyBwd25lZA==^G", "^[]52;c;ZWNobyBwd25lZA==^G"},
		{"carriage return", "safe\rEVIL", "safe^MEVIL", "safe^MEVIL"},
		{"del", "a\x7fb", "a^?b", "a^?b"},
		{"c1 csi", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"bidi override", "abc\u202edcb", `abc\u202edcb`, `abc\u202edcb`},
		{"invalid utf-8", "a\xffb", "a\ufffdb", "a\ufffdb"},
		{"nul", "a\x00b", "a^@b", "a^@b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Neutralize(tc.in); got != tc.want {
				t.Errorf("Neutralize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := NeutralizeField(tc.in); got != tc.field {
				t.Errorf("NeutralizeField(%q) = %q, want %q", tc.in, got, tc.field)
			}
		})
	}
}

func TestSafeWriterHoldsSplitCharacters(t *testing.T) {
	var out bytes.Buffer
	w := NewSafeWriter(&out)
	in := []byte("é\u009b—\x1b[2K")
	for i := range in {
		if _, err := w.Write(in[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), `é\u009b—^[[2K`; got != want {
		t.Errorf("byte-by-byte writes gave %q, want %q", got, want)
	}
}

// A reply from a hostile model must reach the terminal with no escape sequence in it.
func TestSendNeutralizesEscapes(t *testing.T) {
	var out bytes.Buffer
	c := New(Config{}, strings.NewReader(""), &out, nil)
	hostile := "ok\x1b[1A\x1b[2K\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m"
	if _, err := c.Send(context.Background(), core.Reply{To: c.Address(), Text: hostile}); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(out.Bytes(), "\x1b\x07") || strings.ContainsRune(out.String(), 0x9b) {
		t.Errorf("terminal output still carries control characters: %q", out.String())
	}
	if !strings.Contains(out.String(), "ok^[[1A") {
		t.Errorf("the escapes should be shown visibly, got %q", out.String())
	}
}
