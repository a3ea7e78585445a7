package channels

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Helpers that turn parts of the markdown source into text, and text into escaped output.

// linesText joins the raw source lines of a block.
func linesText(src []byte, lines *text.Segments) string {
	var b strings.Builder
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// codeSpanText is the raw content of a code span; line endings inside it become spaces,
// as CommonMark says.
func codeSpanText(src []byte, n *ast.CodeSpan) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch t := c.(type) {
		case *ast.Text:
			v := t.Segment.Value(src)
			if len(v) > 0 && v[len(v)-1] == '\n' {
				b.Write(v[:len(v)-1])
				b.WriteByte(' ')
				continue
			}
			b.Write(v)
		case *ast.String:
			b.Write(t.Value)
		}
	}
	return b.String()
}

// altText is the text content of an image description, the way CommonMark makes alt text:
// the words only, with no markup and no link addresses.
func altText(src []byte, n ast.Node) string {
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				b.WriteString(unescapeMarkdown(t.Segment.Value(src)))
				if t.SoftLineBreak() || t.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(t.Value)
			case *ast.CodeSpan:
				b.WriteString(codeSpanText(src, t))
			case *ast.AutoLink:
				b.Write(t.Label(src))
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// plainInline renders the inline content of n as plain text (image alt text, table cells).
func plainInline(src []byte, n ast.Node) string {
	r := &renderer{f: flavorPlain, src: src}
	var b bytes.Buffer
	r.inlines(&b, n)
	return b.String()
}

// unescapeMarkdown resolves what CommonMark resolves in text (backslash escapes of ASCII
// punctuation, character references) into plain text that each flavor escapes its own way.
func unescapeMarkdown(src []byte) string {
	if bytes.IndexAny(src, "\\&\x00") < 0 {
		return string(src)
	}
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && util.IsPunct(src[i+1]):
			b.WriteByte(src[i+1])
			i++
		case c == 0:
			b.WriteRune(utf8.RuneError)
		case c == '&':
			if r, n := characterReference(src[i:]); n > 0 {
				b.WriteString(r)
				i += n - 1
				continue
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// characterReference decodes an entity (&amp;) or numeric (&#35; &#x23;) reference at the
// start of s, returning its text and length, or 0 when s does not start with one.
func characterReference(s []byte) (string, int) {
	// The longest entity name is 31 characters; looking further would make a text full of
	// '&' quadratic.
	end := bytes.IndexByte(s[:min(len(s), 40)], ';')
	if end < 2 {
		return "", 0
	}
	body := string(s[1:end])
	if body[0] == '#' {
		digits, base := body[1:], 10
		if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
			digits, base = digits[1:], 16
		}
		if digits == "" || (base == 10 && len(digits) > 7) || (base == 16 && len(digits) > 6) {
			return "", 0
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return "", 0
		}
		r := rune(v)
		if r == 0 || !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		return string(r), end + 1
	}
	for _, c := range []byte(body) {
		if !util.IsAlphaNumeric(c) {
			return "", 0
		}
	}
	e, ok := util.LookUpHTML5EntityByName(body)
	if !ok {
		return "", 0
	}
	return string(e.Characters), end + 1
}

// writeTelegramEscaped writes s with the characters Telegram's HTML parser treats
// specially replaced by the entities it supports.
func writeTelegramEscaped(b *bytes.Buffer, s string) {
	writeEscaped(b, s, func(i int) string { return markupEntity(s[i]) })
}

// writeAttrEscaped is writeTelegramEscaped for an attribute value: the double quote too.
func writeAttrEscaped(b *bytes.Buffer, s string) {
	writeEscaped(b, s, func(i int) string {
		if s[i] == '"' {
			return "&quot;"
		}
		return markupEntity(s[i])
	})
}

// markupEntity is the entity of &, < or >, the characters that are markup in both HTML and
// Slack's mrkdwn; "" for any other byte.
func markupEntity(c byte) string {
	switch c {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return ""
}

// writeEscaped writes s with each byte for which rep answers a replacement replaced by it.
func writeEscaped(b *bytes.Buffer, s string, rep func(i int) string) {
	last := 0
	for i := 0; i < len(s); i++ {
		if r := rep(i); r != "" {
			b.WriteString(s[last:i])
			b.WriteString(r)
			last = i + 1
		}
	}
	b.WriteString(s[last:])
}
