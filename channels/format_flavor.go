package channels

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/util"
)

// The flavor switches: how text, code and links are written for each platform.

func (r *renderer) text(b *bytes.Buffer, s string) {
	switch r.f {
	case flavorTelegram:
		writeTelegramEscaped(b, s)
	case flavorSlack:
		writeSlackEscaped(b, s)
	case flavorDiscord:
		writeDiscordEscaped(b, s)
	default:
		b.WriteString(s)
	}
}

func (r *renderer) codeSpan(b *bytes.Buffer, code string) {
	if code == "" {
		return
	}
	switch r.f {
	case flavorTelegram:
		if r.inLink {
			r.text(b, code)
			return
		}
		r.enclose(b, "<code>", code, "</code>")
	case flavorSlack:
		// Slack has no escape for a backtick inside code; a look-alike keeps the span whole.
		r.enclose(b, "`", strings.ReplaceAll(code, "`", "ˋ"), "`")
	case flavorDiscord:
		discordCodeSpan(b, code)
	default:
		b.WriteString(code)
	}
}

// enclose writes s, escaped as text, between open and closing.
func (r *renderer) enclose(b *bytes.Buffer, open, s, closing string) {
	b.WriteString(open)
	r.text(b, s)
	b.WriteString(closing)
}

// codeBlock writes a block of code; an empty one is left out (an empty <pre> would be an
// empty entity on Telegram).
func (r *renderer) codeBlock(b *bytes.Buffer, lang, code string) {
	code = strings.TrimRight(code, "\n")
	if code == "" {
		return
	}
	switch r.f {
	case flavorTelegram:
		open, closing := "<pre>", "</pre>"
		if lang = sanitizeLanguage(lang); lang != "" {
			open, closing = `<pre><code class="language-`+lang+`">`, "</code></pre>"
		}
		r.enclose(b, open, code, closing)
	case flavorSlack:
		r.enclose(b, "```\n", strings.ReplaceAll(code, "```", "`\u200b``"), "\n```")
	case flavorDiscord:
		discordFence(b, sanitizeLanguage(lang), code)
	default:
		prefixLines(b, code, "    ", "")
	}
}

// link writes a link to dest whose label is written by label; bare says the label is the
// address itself (an autolink), so the platform's short form fits. Only http(s), tg and
// mailto links become links; anything else (javascript:, data:, relative paths) keeps just
// its label. The label is rendered once: rendering it twice per level would make nested
// images and links exponential.
func (r *renderer) link(b *bytes.Buffer, dest string, bare bool, label func()) {
	dest = strings.TrimSpace(dest)
	if r.inLink || !allowedURL(dest) {
		label()
		return
	}
	href := string(util.URLEscape([]byte(dest), false))
	if scheme, rest, ok := strings.Cut(href, ":"); ok {
		href = strings.ToLower(scheme) + ":" + rest // schemes are case-insensitive; platforms expect lower case
	}
	r.inLink = true
	defer func() { r.inLink = false }()
	mark := b.Len()
	switch r.f {
	case flavorTelegram:
		var attr bytes.Buffer
		writeAttrEscaped(&attr, href)
		if attr.Len() > maxHrefLen {
			// Too long to repeat around every split of the message; shown as text, which
			// Telegram still turns into a link.
			label()
			if !bare {
				r.enclose(b, " (", dest, ")")
			}
			return
		}
		b.WriteString(`<a href="`)
		b.Write(attr.Bytes())
		b.WriteString(`">`)
		start := b.Len()
		label()
		if b.Len() == start {
			r.text(b, dest)
		}
		b.WriteString("</a>")
	case flavorSlack:
		slackLink(b, href, bare, label)
	case flavorDiscord:
		discordLink(b, href, bare, label)
	default:
		label()
		shown := string(b.Bytes()[mark:])
		switch {
		case shown == "":
			b.WriteString(dest)
		case !bare && shown != dest && "mailto:"+shown != dest:
			b.WriteString(" (" + dest + ")")
		}
	}
}

// isBareLink reports whether the label of link n is its destination written out, as in
// [https://e.com](https://e.com) or [a@b.c](mailto:a@b.c).
func isBareLink(src []byte, n *ast.Link, dest string) bool {
	t, ok := n.FirstChild().(*ast.Text)
	if !ok || t.NextSibling() != nil {
		return false
	}
	v := unescapeMarkdown(t.Segment.Value(src))
	return v == dest || "mailto:"+v == dest
}

// maxHrefLen bounds the URL of a Telegram link, so that SplitHTML can always carry the <a>
// tag over a split (see maxTagLen).
const maxHrefLen = 2048

// allowedURL reports whether dest may become a clickable link: an absolute URL whose scheme
// is on the allowlist and which has no whitespace or control characters (browsers strip
// those, which is how "java\tscript:" sneaks past naive checks).
func allowedURL(dest string) bool {
	for _, c := range dest {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	scheme, rest, ok := strings.Cut(dest, ":")
	if !ok || rest == "" {
		return false
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		return strings.HasPrefix(rest, "//") && len(rest) > 2
	case "tg", "mailto":
		return true
	}
	return false
}

// sanitizeLanguage cuts a code block's language at the first character that is not safe in
// an HTML attribute or a fence info string, and keeps it short enough not to matter for
// splitting.
func sanitizeLanguage(lang string) string {
	var b strings.Builder
	for _, c := range lang {
		if b.Len() >= 32 {
			break
		}
		if c >= utf8.RuneSelf || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.ContainsRune("+-_.#", c)) {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}
