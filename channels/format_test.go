package channels

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// checkTelegramHTML returns why s would not be accepted by Telegram's HTML parse mode, or
// nil: only Telegram's tags, each one closed, attributes only on <a href> (with an allowed
// scheme) and <code class="language-x"> (directly inside <pre>), only the entities Telegram
// knows, and its nesting rules. It uses encoding/xml, not the package's own tokenizer, so
// the check is independent of the code under test.
func checkTelegramHTML(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '&' {
			continue
		}
		rest := s[i:]
		ok := false
		for _, e := range []string{"&amp;", "&lt;", "&gt;", "&quot;", "&#"} {
			ok = ok || strings.HasPrefix(rest, e)
		}
		if !ok {
			return fmt.Errorf("unsupported entity at %d: %.10q", i, rest)
		}
	}
	// encoding/xml refuses control characters that Telegram accepts in text.
	clean := strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return ' '
		}
		return r
	}, s)
	d := xml.NewDecoder(strings.NewReader("<root>" + clean + "</root>"))
	d.Strict = true
	var stack []string
	in := func(name string) bool { return slices.Contains(stack, name) }
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if len(stack) == 0 && name == "root" {
				stack = append(stack, name)
				continue
			}
			parent := stack[len(stack)-1]
			switch name {
			case "b", "i", "u", "s", "blockquote", "pre":
				if len(t.Attr) != 0 {
					return fmt.Errorf("<%s> with attributes", name)
				}
			case "code":
				if len(t.Attr) > 0 && (parent != "pre" || len(t.Attr) != 1 || t.Attr[0].Name.Local != "class" ||
					!strings.HasPrefix(t.Attr[0].Value, "language-")) {
					return fmt.Errorf("bad <code> attributes %v", t.Attr)
				}
			case "a":
				if len(t.Attr) != 1 || t.Attr[0].Name.Local != "href" || !allowedURL(t.Attr[0].Value) {
					return fmt.Errorf("bad <a> attributes %v", t.Attr)
				}
			default:
				return fmt.Errorf("tag <%s> not allowed", name)
			}
			switch {
			case in("code") || in("pre") && !(name == "code" && parent == "pre"):
				return fmt.Errorf("<%s> inside <%s>", name, parent)
			case in("a") && (name == "a" || name == "code" || name == "pre"):
				return fmt.Errorf("<%s> inside <a>", name)
			case name == "blockquote" && in("blockquote"):
				return errors.New("nested <blockquote>")
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.Comment, xml.ProcInst, xml.Directive:
			return fmt.Errorf("markup %T not allowed", tok)
		}
	}
	return nil
}

func TestTelegramHTML(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"bold", "**b**", "<b>b</b>"},
		{"bold underscores", "__b__", "<b>b</b>"},
		{"italic", "*i* and _j_", "<i>i</i> and <i>j</i>"},
		{"bold italic", "***x***", "<i><b>x</b></i>"},
		{"strike", "~~s~~", "<s>s</s>"},
		{"code span", "`a<b>&c`", "<code>a&lt;b&gt;&amp;c</code>"},
		{"fenced code with language", "```go\nif a < b {}\n```", `<pre><code class="language-go">if a &lt; b {}</code></pre>`},
		{"fenced code language sanitised", "```go\"><script>\nx\n```", `<pre><code class="language-go">x</code></pre>`},
		{"fenced code without language", "```\nplain\n```", "<pre>plain</pre>"},
		{"empty code block", "a\n\n```\n```\n\nb", "a\n\nb"},
		{"indented code", "    indented\n    more", "<pre>indented\nmore</pre>"},
		{"heading", "# Title\n\ntext", "<b>Title</b>\n\ntext"},
		{"heading level 3 with style", "### A *b*", "<b>A <i>b</i></b>"},
		{"empty heading", "#\n\ntext", "text"},
		{"stars that are not emphasis", "a ** ** b", "a ** ** b"},
		{"bullet list", "- a\n- b", "• a\n• b"},
		{"nested list", "- a\n  - b\n    - c", "• a\n  ◦ b\n    ▪ c"},
		{"ordered list keeps start", "3. a\n4. b", "3. a\n4. b"},
		{"loose list", "- a\n\n- b", "• a\n\n• b"},
		{"list item with paragraphs", "1. first\n\n   second", "1. first\n\n   second"},
		{"task list", "- [ ] todo\n- [x] done", "• [ ] todo\n• [x] done"},
		{"quote", "> q\n> r", "<blockquote>q\nr</blockquote>"},
		{"nested quote is not nested", "> a\n>\n> > b", "<blockquote>a\n\nb</blockquote>"},
		{"link", "[l](https://e.com/a?b=1&c=2)", `<a href="https://e.com/a?b=1&amp;c=2">l</a>`},
		{"link with entity and escape", `[l](https://e.com/?a=1&amp;b=\(2\))`, `<a href="https://e.com/?a=1&amp;b=(2)">l</a>`},
		{"link with styled label", "[**l**](http://e.com)", `<a href="http://e.com"><b>l</b></a>`},
		{"code inside link is text", "[`x`](https://e.com)", `<a href="https://e.com">x</a>`},
		{"tg link", "[me](tg://user?id=1)", `<a href="tg://user?id=1">me</a>`},
		{"mailto link", "[m](mailto:a@b.c)", `<a href="mailto:a@b.c">m</a>`},
		{"email autolink", "<a@b.c>", `<a href="mailto:a@b.c">a@b.c</a>`},
		{"url autolink", "<https://e.com>", `<a href="https://e.com">https://e.com</a>`},
		{"bare url", "see https://e.com/x now", `see <a href="https://e.com/x">https://e.com/x</a> now`},
		{"image becomes link", "![a cat](https://e.com/c.png)", `<a href="https://e.com/c.png">a cat</a>`},
		{"nested images", strings.Repeat("![", 40) + "x" + strings.Repeat("](https://e.com)", 40), `<a href="https://e.com">x</a>`},
		{"image without alt", "![](https://e.com/c.png)", `<a href="https://e.com/c.png">image</a>`},
		{"quote in href escaped", `[x](<https://e.com/a"b>)`, `<a href="https://e.com/a%22b">x</a>`},
		{"thematic break", "a\n\n---\n\nb", "a\n\n──────────\n\nb"},
		{"hard break", "a  \nb", "a\nb"},
		{"soft break", "a\nb", "a\nb"},
		{"escapes", `\*not\* \_em\_ 1\. \<tag\>`, "*not* _em_ 1. &lt;tag&gt;"},
		{"entities", "&amp; &lt; &copy; &#x1F600; &#0;", "&amp; &lt; © 😀 \uFFFD"},
		{"special characters", `a & b < c > d "e"`, `a &amp; b &lt; c &gt; d "e"`},
		{"empty", "", ""},
		{"only spaces", "   \n\n  ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TelegramHTML(tt.md)
			if got != tt.want {
				t.Errorf("TelegramHTML(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
			if err := checkTelegramHTML(got); err != nil {
				t.Errorf("output not valid Telegram HTML: %v\n%s", err, got)
			}
		})
	}
}

func TestTelegramHTMLHostile(t *testing.T) {
	tests := []struct {
		name, md string
		absent   []string // substrings the output must not contain
		present  []string
	}{
		{"script block", "<script>alert(1)</script>", []string{"<script"}, []string{"&lt;script&gt;alert(1)&lt;/script&gt;"}},
		{"inline raw html", "hi <b onclick=x>there</b>", []string{"<b "}, []string{"&lt;b onclick=x&gt;there&lt;/b&gt;"}},
		{"img onerror", `<img src=x onerror="alert(1)">`, []string{"<img"}, []string{"&lt;img"}},
		{"html comment", "a <!-- hidden --> b", []string{"<!--"}, []string{"&lt;!-- hidden --&gt;"}},
		{"javascript link", "[click](javascript:alert(1))", []string{"<a", "javascript"}, []string{"click"}},
		{"javascript link mixed case", "[click](JaVaScRiPt:alert(1))", []string{"<a"}, []string{"click"}},
		{"javascript with entity", "[click](jav&#x09;ascript:alert(1))", []string{"<a"}, []string{"click"}},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", []string{"<a"}, []string{"x"}},
		{"vbscript link", "[x](vbscript:msgbox)", []string{"<a"}, nil},
		{"relative link", "[docs](./README.md)", []string{"<a"}, []string{"docs"}},
		{"scheme-relative link", "[x](//evil.example)", []string{"<a"}, nil},
		{"javascript image", "![x](javascript:alert(1))", []string{"<a"}, nil},
		{"unbalanced emphasis", "**bold *mixed _all__ ~~x", nil, []string{"**bold"}},
		{"unclosed fence", "```go\nfunc main() {", nil, []string{`<pre><code class="language-go">func main() {</code></pre>`}},
		{"unclosed code span", "`code", nil, []string{"`code"}},
		{"link in link", "[a [b](https://x.com) c](https://y.com)", nil, []string{"https://x.com"}},
		{"nested quotes deep", "> > > > deep", []string{"<blockquote><blockquote>"}, []string{"deep"}},
		{"table cells with markup", "| <b>x</b> | `y` |\n|---|---|\n| [l](javascript:1) | **z** |", []string{"<b>x"}, []string{"&lt;b&gt;x&lt;/b&gt;"}},
		{"invalid utf8", "a\xffb", nil, []string{"a\uFFFDb"}},
		{"null byte", "a\x00b", nil, []string{"a\uFFFDb"}},
		{"mention text stays text", "@everyone <@123>", nil, []string{"@everyone &lt;@123&gt;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TelegramHTML(tt.md)
			if err := checkTelegramHTML(got); err != nil {
				t.Fatalf("TelegramHTML(%q) = %q: %v", tt.md, got, err)
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("TelegramHTML(%q) = %q, contains %q", tt.md, got, a)
				}
			}
			for _, p := range tt.present {
				if !strings.Contains(got, p) {
					t.Errorf("TelegramHTML(%q) = %q, lacks %q", tt.md, got, p)
				}
			}
		})
	}
}

func TestTelegramHTMLLongURLIsText(t *testing.T) {
	for _, url := range []string{
		"https://e.com/" + strings.Repeat("a", maxHrefLen),
		"https://e.com/?" + strings.Repeat("&", maxHrefLen/4), // short, but long once escaped
	} {
		got := TelegramHTML("[x](" + url + ")")
		if strings.Contains(got, "<a") || !strings.Contains(got, "x ("+strings.ReplaceAll(url, "&", "&amp;")+")") {
			t.Errorf("a %d-byte link should be shown as text, got %.80q", len(url), got)
		}
		if err := checkTelegramHTML(got); err != nil {
			t.Error(err)
		}
	}
	short := "https://e.com/?" + strings.Repeat("&", 100)
	if got := TelegramHTML("[x](" + short + ")"); !strings.HasPrefix(got, "<a href=") {
		t.Errorf("a short link should stay a link, got %.80q", got)
	}
}

const tableMD = "| name | qty | note |\n|:-----|----:|:----:|\n| 苹果 | 3 | **fresh** |\n| pear | 12 | [x](https://e.com) |\n| kiwi | | |"

func TestTables(t *testing.T) {
	got := PlainText(tableMD)
	if got == "" {
		t.Fatal("PlainText of a table is empty")
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 5 {
		t.Fatalf("table has %d lines, want 5:\n%s", len(lines), got)
	}
	for _, cell := range []string{"name", "苹果", "pear", "12", "fresh", "x (https://e.com)", "kiwi"} {
		if !strings.Contains(got, cell) {
			t.Errorf("table lacks %q:\n%s", cell, got)
		}
	}
	// Columns line up: the separators sit at the same display column on every row.
	col := -1
	for _, line := range lines {
		before, _, ok := strings.Cut(line, "│")
		if !ok {
			before, _, ok = strings.Cut(line, "┼")
		}
		if !ok {
			t.Fatalf("row without separator: %q", line)
		}
		if w := displayWidth(before); col < 0 {
			col = w
		} else if w != col {
			t.Errorf("row %q has its first separator at column %d, want %d", line, w, col)
		}
	}
	if !strings.HasPrefix(lines[0], "name │ qty │") || !strings.HasPrefix(lines[1], "─────┼─────┼─") {
		t.Errorf("header = %q / %q", lines[0], lines[1])
	}
	if !strings.Contains(lines[2], "│   3 │") {
		t.Errorf("qty is right-aligned: %q", lines[2])
	}

	for name, conv := range map[string]func(string) string{
		"telegram": TelegramHTML, "slack": SlackMrkdwn, "discord": DiscordMarkdown,
	} {
		t.Run(name, func(t *testing.T) {
			out := conv(tableMD)
			if !strings.Contains(out, "苹果") || !strings.Contains(out, "fresh") {
				t.Errorf("table lost its cells: %q", out)
			}
			if strings.Contains(out, "|") || strings.Contains(out, "**fresh") {
				t.Errorf("markdown table syntax left in output: %q", out)
			}
		})
	}
	tg := TelegramHTML(tableMD)
	if !strings.HasPrefix(tg, "<pre>") || !strings.HasSuffix(tg, "</pre>") {
		t.Errorf("Telegram table is not a <pre> block: %q", tg)
	}
	if err := checkTelegramHTML(tg); err != nil {
		t.Error(err)
	}
	if chunks := SplitHTML(tg, 4096); len(chunks) != 1 || chunks[0] != tg {
		t.Errorf("a table alone must make one non-empty message, got %q", chunks)
	}
}

func TestSlackMrkdwn(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"bold", "**b**", "*b*"},
		{"italic", "*i*", "_i_"},
		{"strike", "~~s~~", "~s~"},
		{"code", "`a<b`", "`a&lt;b`"},
		{"code with backtick", "`` a`b ``", "`aˋb`"},
		{"pre", "```go\nx := 1 && 2\n```", "```\nx := 1 &amp;&amp; 2\n```"},
		{"heading", "## Head **x**", "*Head x*"},
		{"list", "- a\n- b\n\n1. c", "• a\n• b\n\n1. c"},
		{"task list", "- [x] done", "• [x] done"},
		{"quote", "> q\n>\n> r", "> q\n>\n> r"},
		{"link", "[l](https://e.com/?a=1&b=2)", "<https://e.com/?a=1&amp;b=2|l>"},
		{"upper-case scheme", "[](httP://e.com)", "<http://e.com>"},
		{"link with pipe", "[l](https://e.com/a|b)", "<https://e.com/a%7Cb|l>"},
		{"autolink", "<https://e.com>", "<https://e.com>"},
		{"mailto", "<a@b.c>", "<mailto:a@b.c|a@b.c>"},
		{"javascript link", "[l](javascript:x)", "l"},
		{"escapes", "a & b < c > d", "a &amp; b &lt; c &gt; d"},
		{"channel mention", "<!channel> <!here> <!everyone>", "&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt;"},
		{"user mention", "<@U123> <#C1> <!subteam^S1>", "&lt;@U123&gt; &lt;#C1&gt; &lt;!subteam^S1&gt;"},
		{"broadcast words", "@channel @here @Everyone", "@\u200bchannel @\u200bhere @\u200bEveryone"},
		{"entity spelled mention", "&lt;!channel&gt;", "&lt;!channel&gt;"},
		{"raw html", "<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"},
		{"image", "![cat](https://e.com/c.png)", "<https://e.com/c.png|cat>"},
		{"break", "---", "──────────"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SlackMrkdwn(tt.md)
			if got != tt.want {
				t.Errorf("SlackMrkdwn(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
			if err := checkSlack(got); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkSlack returns an error when s has a Slack control sequence other than a link: any
// <...> that is not <http...>, <mailto:...> or <tg:...>, or an @-broadcast.
func checkSlack(s string) error {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			rest := s[i+1:]
			if !strings.HasPrefix(rest, "http://") && !strings.HasPrefix(rest, "https://") &&
				!strings.HasPrefix(rest, "mailto:") && !strings.HasPrefix(rest, "tg:") {
				return fmt.Errorf("control sequence at %d: %.20q", i, s[i:])
			}
		case '@':
			if startsWithAnyFold(s[i+1:], slackBroadcasts[:]) {
				return fmt.Errorf("broadcast at %d: %.20q", i, s[i:])
			}
		}
	}
	return nil
}

func TestDiscordMarkdown(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"bold italic strike", "**b** *i* ~~s~~", "**b** *i* ~~s~~"},
		{"code", "`x`", "`x`"},
		{"code with backticks", "`` a`b ``", "``a`b``"},
		{"fence", "```go\nx\n```", "```go\nx\n```"},
		{"fence inside code", "````\n```\n````", "```\n`\u200b``\n```"},
		{"heading", "## H", "## H"},
		{"deep heading", "#### H", "**H**"},
		{"list", "- a\n  - b\n1. c", "- a\n  - b\n\n1. c"},
		{"quote", "> q", "> q"},
		{"link", "[l](https://e.com/(x))", "[l](https://e.com/%28x%29)"},
		{"autolink", "https://e.com/a_b", "<https://e.com/a_b>"},
		{"non-http link", "[m](mailto:a@b.c)", "m"},
		{"escaped markup", `\*x\* snake_case a|b \[c\]`, `\*x\* snake\_case a\|b \[c\]`},
		{"line-start markup", `\# no \- list`, `\# no - list`},
		{"line-start number", `1\. not a list`, `1\. not a list`},
		{"everyone", "@everyone and @here", "@\u200beveryone and @\u200bhere"},
		{"mentions", "<@123> <@!4> <@&5> <#6>", "<\u200b@123> <\u200b@!4> <\u200b@&5> <\u200b#6>"},
		{"mention in code", "`@everyone`", "`@\u200beveryone`"},
		{"mention in fence", "```\n<@123> @here\n```", "```\n<\u200b@123> @\u200bhere\n```"},
		{"mention in url", "[x](https://e.com/@everyone)", "[x](https://e.com/%40everyone)"},
		{"entity mention", "&#64;everyone", "@\u200beveryone"},
		{"raw html", "<b>x</b>", "<b>x</b>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DiscordMarkdown(tt.md)
			if got != tt.want {
				t.Errorf("DiscordMarkdown(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
			if err := checkDiscord(got); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkDiscord returns an error when s holds a mention Discord would resolve.
func checkDiscord(s string) error {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '@' && startsWithAnyFold(s[i+1:], discordBroadcasts[:]):
			return fmt.Errorf("broadcast at %d: %.20q", i, s[i:])
		case s[i] == '<' && i+1 < len(s) && (s[i+1] == '@' || s[i+1] == '#'):
			return fmt.Errorf("mention at %d: %.20q", i, s[i:])
		}
	}
	return nil
}

func TestConvertersConcurrent(t *testing.T) {
	// The parser is shared; the race detector checks that sharing it is safe.
	want := TelegramHTML(richReply)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := TelegramHTML(richReply); got != want {
					t.Errorf("concurrent render differs")
					return
				}
				_ = SlackMrkdwn(richReply)
			}
		})
	}
	wg.Wait()
}

func FuzzTelegramHTML(f *testing.F) {
	for _, s := range []string{
		richReply, tableMD, "", "**a *b** c*", "<script>x</script>", "[a](javascript:b)",
		"> > q\n> ```\n> x", "- a\n  > b\n  ```\n  c", "`` ` ``", "<@1> @everyone <!here>",
		"[`x`](https://e.com)", "***a** b*", "<a href=\"x\">y</a>", "&#0; &#xD800; &bogus;",
		"| a |\n|---|\n| <b> |", "[a [b](http://x.com)](http://y.com)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		tg := TelegramHTML(md)
		if err := checkTelegramHTML(tg); err != nil {
			t.Fatalf("TelegramHTML(%q) = %q: %v", md, tg, err)
		}
		if sl := SlackMrkdwn(md); checkSlack(sl) != nil || !utf8.ValidString(sl) {
			t.Fatalf("SlackMrkdwn(%q) = %q: %v", md, sl, checkSlack(sl))
		}
		if dc := DiscordMarkdown(md); checkDiscord(dc) != nil || !utf8.ValidString(dc) {
			t.Fatalf("DiscordMarkdown(%q) = %q: %v", md, dc, checkDiscord(dc))
		}
		if pt := PlainText(md); !utf8.ValidString(pt) {
			t.Fatalf("PlainText(%q) is not valid UTF-8", md)
		}
	})
}

func BenchmarkTelegramHTML(b *testing.B) {
	md := longReply(9000)
	b.SetBytes(int64(len(md)))
	var out string
	for b.Loop() {
		out = TelegramHTML(md)
	}
	b.ReportMetric(float64(UTF16Len(out)), "utf16-out/op")
}
