package channels

// Outbound replies are markdown (core.Reply.Text), parsed once with goldmark (CommonMark
// plus GFM) and rendered for the target: Telegram HTML, Slack mrkdwn, Discord markdown or
// plain text. A parser rather than pattern rewriting is what keeps hostile or unusual input
// (raw HTML, unbalanced emphasis, link syntax inside code) from becoming markup the
// platform rejects or executes. Block structure is rendered the same everywhere; the
// dialect table and the per-platform files say how text, styles, code and links are written.

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// markdownParser is built once: assembling goldmark's parser tables costs far more than
// parsing a reply. Its per-call state lives in the parse context, so goroutines share it.
var markdownParser = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
})

// flavor is the output format of a render, an index into dialects.
type flavor uint8

const (
	flavorTelegram flavor = iota
	flavorSlack
	flavorDiscord
	flavorPlain
)

func (f flavor) String() string { return [...]string{"telegram", "slack", "discord", "plain"}[f] }

// dialect is what a flavor writes for the inline styles (open and closing markers) and
// the lines of a quote (before a line, and before an empty one); Telegram writes a quote
// as an element instead. Text escaping is a switch (renderer.text): through a function
// value, every buffer it writes to would escape to the heap.
type dialect struct {
	bold, italic, strike marks
	quote                marks
}

type marks [2]string

var dialects = [...]dialect{
	flavorTelegram: {bold: marks{"<b>", "</b>"}, italic: marks{"<i>", "</i>"}, strike: marks{"<s>", "</s>"}},
	flavorSlack:    {bold: marks{"*", "*"}, italic: marks{"_", "_"}, strike: marks{"~", "~"}, quote: marks{"> ", ">"}},
	flavorDiscord:  {bold: marks{"**", "**"}, italic: marks{"*", "*"}, strike: marks{"~~", "~~"}, quote: marks{"> ", ">"}},
	flavorPlain:    {quote: marks{"│ ", "│"}},
}

// thematicBreak stands in for "---": no platform here renders a horizontal rule.
const thematicBreak = "──────────"

// renderer walks one parsed document. It is used by one goroutine for one render.
type renderer struct {
	f   flavor
	src []byte
	// inLink is set while a link label is written: Telegram refuses code and links inside
	// links, and Slack's <url|label> cannot nest.
	inLink bool
	// inBold suppresses nested bold markers where the platform cannot nest them (Slack
	// headings are already *bold*).
	inBold bool
	// quoteDepth counts enclosing block quotes: Telegram refuses nested <blockquote>.
	quoteDepth int
	// listDepth picks the bullet for nested lists.
	listDepth int
}

func render(md string, f flavor) string {
	if f != flavorDiscord && plainParagraph(md) {
		// What goldmark would make of it: one paragraph holding md as its text.
		var b bytes.Buffer
		b.Grow(len(md) + len(md)/4)
		(&renderer{f: f}).text(&b, md)
		return b.String()
	}
	return renderParsed(md, f)
}

// renderParsed is render through goldmark's syntax tree.
func renderParsed(md string, f flavor) string {
	// Platforms reject invalid UTF-8 (or mangle it in JSON); replace it once, up front.
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := markdownParser().Parse(text.NewReader(src))
	r := &renderer{f: f, src: src}
	var b bytes.Buffer
	b.Grow(len(src) + len(src)/4)
	r.blocks(&b, doc)
	return strings.TrimRight(b.String(), " \t\n")
}

// blocks writes the block children of parent separated by blank lines, or by single line
// breaks inside the items of a tight list.
func (r *renderer) blocks(b *bytes.Buffer, parent ast.Node) {
	sep := "\n\n"
	if item, ok := parent.(*ast.ListItem); ok {
		if l, ok := item.Parent().(*ast.List); ok && l.IsTight {
			sep = "\n"
		}
	}
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		mark := b.Len()
		if n != parent.FirstChild() && b.Len() > 0 {
			b.WriteString(sep)
		}
		start := b.Len()
		r.block(b, n)
		if b.Len() == start {
			b.Truncate(mark) // an empty block leaves no separator behind
		}
	}
}

func (r *renderer) block(b *bytes.Buffer, n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(b, n)
	case *ast.Heading:
		r.heading(b, n)
	case *ast.ThematicBreak:
		r.text(b, thematicBreak)
	case *ast.FencedCodeBlock:
		var lang string
		if n.Info != nil {
			lang = string(n.Language(r.src))
		}
		r.codeBlock(b, lang, linesText(r.src, n.Lines()))
	case *ast.CodeBlock:
		r.codeBlock(b, "", linesText(r.src, n.Lines()))
	case *ast.Blockquote:
		r.quote(b, n)
	case *ast.List:
		r.list(b, n)
	case *ast.HTMLBlock:
		// Raw HTML is shown as the text it is, never passed to a platform as markup.
		raw := linesText(r.src, n.Lines())
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(r.src))
		}
		r.text(b, strings.TrimRight(raw, "\n"))
	case *extast.Table:
		r.table(b, n)
	default:
		if n.Type() == ast.TypeBlock && n.FirstChild() != nil && n.FirstChild().Type() == ast.TypeBlock {
			r.blocks(b, n)
		} else {
			r.inlines(b, n)
		}
	}
}

// inlines writes the inline children of parent.
func (r *renderer) inlines(b *bytes.Buffer, parent ast.Node) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		r.inline(b, n)
	}
}

func (r *renderer) inline(b *bytes.Buffer, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		if n.IsRaw() {
			r.text(b, string(n.Segment.Value(r.src)))
		} else {
			r.text(b, unescapeMarkdown(n.Segment.Value(r.src)))
		}
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.WriteByte('\n')
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.text(b, string(n.Value))
		} else {
			r.text(b, unescapeMarkdown(n.Value))
		}
	case *ast.CodeSpan:
		r.codeSpan(b, codeSpanText(r.src, n))
	case *ast.Emphasis:
		if n.Level >= 2 {
			r.styled(b, n, dialects[r.f].bold, true)
		} else {
			r.styled(b, n, dialects[r.f].italic, false)
		}
	case *extast.Strikethrough:
		r.styled(b, n, dialects[r.f].strike, false)
	case *ast.Link:
		dest := unescapeMarkdown(n.Destination)
		r.link(b, dest, isBareLink(r.src, n, dest), func() { r.inlines(b, n) })
	case *ast.Image:
		alt := altText(r.src, n)
		if alt == "" {
			alt = "image"
		}
		r.link(b, unescapeMarkdown(n.Destination), false, func() { r.text(b, alt) })
	case *ast.AutoLink:
		url := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		label := string(n.Label(r.src))
		r.link(b, url, n.AutoLinkType == ast.AutoLinkURL, func() { r.text(b, label) })
	case *ast.RawHTML:
		r.text(b, linesText(r.src, n.Segments))
	case *extast.TaskCheckBox:
		// A checkbox stays readable text; no platform here has a checkbox.
		if n.IsChecked {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
	default:
		r.inlines(b, n)
	}
}

// styled writes the children of n wrapped in m, leaving out the marks when the
// content is empty (an empty entity is an error on Telegram).
func (r *renderer) styled(b *bytes.Buffer, n ast.Node, m marks, bold bool) {
	if bold && r.inBold {
		m = marks{}
	}
	r.wrapInlines(b, n, m[0], m[1], r.inBold || bold && r.f == flavorSlack)
}

// wrapInlines writes the children of n between open and closing, with r.inBold set to
// bold while they are written; content that is empty leaves out the markers too.
func (r *renderer) wrapInlines(b *bytes.Buffer, n ast.Node, open, closing string, bold bool) {
	prev := r.inBold
	r.inBold = bold
	wrote := writeNonEmpty(b, open, func() { r.inlines(b, n) })
	r.inBold = prev
	if wrote {
		b.WriteString(closing)
	}
}

// writeNonEmpty writes prefix and then what write writes; if write writes nothing, the
// prefix is taken back too and it reports false.
func writeNonEmpty(b *bytes.Buffer, prefix string, write func()) bool {
	mark := b.Len()
	b.WriteString(prefix)
	start := b.Len()
	write()
	if b.Len() == start {
		b.Truncate(mark)
		return false
	}
	return true
}

// heading writes a heading as a bold line (Discord has real headings for levels 1 to 3),
// or nothing when it has no text.
func (r *renderer) heading(b *bytes.Buffer, n *ast.Heading) {
	m := dialects[r.f].bold
	if r.f == flavorDiscord && n.Level <= 3 {
		// Discord renders #, ## and ###; deeper levels would show their hashes.
		m = marks{strings.Repeat("#", n.Level) + " ", ""}
	}
	r.wrapInlines(b, n, m[0], m[1], r.f == flavorSlack)
}

func (r *renderer) quote(b *bytes.Buffer, n *ast.Blockquote) {
	r.quoteDepth++
	var inner bytes.Buffer
	r.blocks(&inner, n)
	r.quoteDepth--
	content := strings.TrimRight(inner.String(), "\n")
	if content == "" {
		return
	}
	switch {
	case r.f != flavorTelegram:
		prefixLines(b, content, dialects[r.f].quote[0], dialects[r.f].quote[1])
	case r.quoteDepth > 0:
		b.WriteString(content)
	default:
		b.WriteString("<blockquote>")
		b.WriteString(content)
		b.WriteString("</blockquote>")
	}
}

// bullets are the list markers by nesting depth.
var bullets = [...]string{"• ", "◦ ", "▪ "}

func (r *renderer) list(b *bytes.Buffer, l *ast.List) {
	sep := "\n\n"
	if l.IsTight {
		sep = "\n"
	}
	num := l.Start
	depth := r.listDepth
	r.listDepth++
	defer func() { r.listDepth-- }()
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if item != l.FirstChild() {
			b.WriteString(sep)
		}
		var marker string
		switch {
		case l.IsOrdered():
			marker = strconv.Itoa(num) + ". "
			num++
		case r.f == flavorDiscord:
			marker = "- "
		default:
			marker = bullets[depth%len(bullets)]
		}
		var inner bytes.Buffer
		r.blocks(&inner, item)
		content := strings.TrimRight(inner.String(), "\n")
		if content == "" {
			b.WriteString(strings.TrimRight(marker, " "))
			continue
		}
		head, rest, more := strings.Cut(content, "\n")
		b.WriteString(marker)
		b.WriteString(head)
		if more {
			b.WriteByte('\n')
			prefixLines(b, rest, strings.Repeat(" ", utf8.RuneCountInString(marker)), "")
		}
	}
}

// prefixLines writes content with prefix before every line (bare for an empty line).
func prefixLines(b *bytes.Buffer, content, prefix, bare string) {
	first := true
	for line := range strings.SplitSeq(content, "\n") {
		if !first {
			b.WriteByte('\n')
		}
		first = false
		if line == "" {
			b.WriteString(bare)
			continue
		}
		b.WriteString(prefix)
		b.WriteString(line)
	}
}

// plainParagraph reports whether md is one line that CommonMark with GFM parses into a
// single paragraph of exactly its own text: ASCII letters, digits, spaces and punctuation
// that means nothing mid-line, starting with a letter (so no block can start) and not
// ending in a space, with no "www." for an autolink (a URL would need '/', an e-mail '@').
// Such a reply, the common short one, skips the parser, most of its formatting cost.
// Discord's escaping depends on where its parser splits the text, so Discord always
// parses. TestPlainParagraphRendersAsParsed holds this to the parser.
func plainParagraph(md string) bool {
	if md == "" || !isASCIILetter(md[0]) || md[len(md)-1] == ' ' {
		return false
	}
	for i := 0; i < len(md); i++ {
		c := md[i]
		if isASCIILetter(c) || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case ' ', ',', '.', '?', '!', '\'', '"', ';', ':', '(', ')', '-':
		default:
			return false
		}
	}
	for i := 0; i+4 <= len(md); i++ {
		if strings.EqualFold(md[i:i+4], "www.") {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
