package terminal

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Neutralize makes text from a model, a workspace file or a chat safe to print to a
// terminal: control characters (C0 but newline and tab, DEL, C1) and bidirectional
// overrides are shown as visible escapes, so an ESC or OSC sequence cannot erase lines,
// retitle the window or write the clipboard, and an override cannot make text read as
// what it is not. Invalid UTF-8 is shown as U+FFFD.
func Neutralize(s string) string { return neutralize(s, false) }

// NeutralizeField is Neutralize for one cell of a table: newlines and tabs become visible
// escapes too, so a value cannot break the table's columns or rows.
func NeutralizeField(s string) string { return neutralize(s, true) }

func neutralize(s string, field bool) string {
	if !needsNeutralizing(s, field) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case (r == '\n' || r == '\t') && !field:
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@') // caret notation: ESC is ^[, BEL is ^G
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsNeutralizing(s string, field bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			// Rare enough in ordinary output to take the careful path.
			return true
		}
		if c == 0x7f || (c < 0x20 && (field || (c != '\n' && c != '\t'))) {
			return true
		}
	}
	return false
}

// isBidiControl reports the explicit directional formatting characters (embeddings,
// overrides, isolates and their terminators).
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// SafeWriter neutralizes everything written through it (see Neutralize). A multi-byte
// character split across two writes is held back until it is complete.
type SafeWriter struct {
	w    io.Writer
	tail []byte // an incomplete UTF-8 sequence from the previous write
}

// NewSafeWriter wraps w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

// Write implements io.Writer; it reports len(p) on success.
func (s *SafeWriter) Write(p []byte) (int, error) {
	buf := append(s.tail, p...)
	s.tail = nil
	cut := len(buf)
	// Hold back a trailing sequence that may be completed by the next write.
	for back := 1; back <= 3 && back <= len(buf); back++ {
		c := buf[len(buf)-back]
		if c < 0x80 {
			break
		}
		if c >= 0xc0 { // a lead byte: is its sequence complete?
			if !utf8.FullRune(buf[len(buf)-back:]) {
				cut = len(buf) - back
			}
			break
		}
	}
	s.tail = append(s.tail, buf[cut:]...)
	if _, err := io.WriteString(s.w, Neutralize(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back incomplete sequence (as U+FFFD).
func (s *SafeWriter) Flush() error {
	if len(s.tail) == 0 {
		return nil
	}
	t := s.tail
	s.tail = nil
	_, err := io.WriteString(s.w, Neutralize(string(t)))
	return err
}
