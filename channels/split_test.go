package channels

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// longReply builds a markdown reply of at least n characters with the constructs a model
// writes: headings, styled paragraphs, lists, links, a code block, CJK text and emoji.
func longReply(n int) string {
	var b strings.Builder
	for i := 1; utf8.RuneCountInString(b.String()) < n; i++ {
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		fmt.Fprintf(&b, "This is **paragraph %d** of the reply, with _emphasis_, a [link](https://example.com/p/%d?a=1&b=2) "+
			"and `inline <code>`. It goes on for a while so that the text is long enough to matter & to need "+
			"escaping of < and > characters. 😀👍🏽\n\n", i, i)
		b.WriteString("- first item with some words\n- second item, a bit longer than the first one\n  - nested item\n\n")
		b.WriteString("中文段落：这是一个很长的句子，用来测试没有空格的文本如何被分割。日本語の文章もここにあります。\n\n")
		if i%3 == 0 {
			b.WriteString("```go\n")
			for j := range 12 {
				fmt.Fprintf(&b, "\tif x%d < y && z > %d { fmt.Println(\"line %d\") }\n", j, j, j)
			}
			b.WriteString("```\n\n")
		}
		b.WriteString("> A quote to close the section.\n\n")
	}
	return b.String()
}

// validUTF16 reports whether s survives a round trip through UTF-16 unchanged: valid UTF-8
// and no unpaired surrogate.
func validUTF16(s string) bool {
	return utf8.ValidString(s) && string(utf16.Decode(utf16.Encode([]rune(s)))) == s
}

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"é", 1},
		{"中文", 2},
		{"😀", 2},
		{"a😀b", 4},
		{"👍🏽", 4},
		{"👨‍👩‍👧", 8},
		{"\xff", 1},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			if got := UTF16Len(tt.s); got != tt.want {
				t.Errorf("UTF16Len(%q) = %d, want %d", tt.s, got, tt.want)
			}
			if got, ref := UTF16Len(tt.s), len(utf16.Encode([]rune(tt.s))); got != ref {
				t.Errorf("UTF16Len(%q) = %d, utf16.Encode says %d", tt.s, got, ref)
			}
		})
	}
}

func TestSplitText(t *testing.T) {
	para := strings.Repeat("word ", 8) // 40 characters
	tests := []struct {
		name  string
		s     string
		limit int
		want  []string
	}{
		{"fits", "short text", 100, []string{"short text"}},
		{"exactly the limit", "abcd", 4, []string{"abcd"}},
		{"paragraph break", para + "\n\n" + para, 60, []string{para + "\n\n", para}},
		{"paragraph before line", para + "\n\n" + "ab\ncd " + para, 70, []string{para + "\n\n", "ab\ncd " + para}},
		{"line break", "aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc", 25, []string{"aaaaaaaaaa\nbbbbbbbbbb\n", "cccccccccc"}},
		{"word break", "alpha beta gamma delta", 12, []string{"alpha beta ", "gamma delta"}},
		{"long word", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"cjk punctuation", "一二三四五。六七八九十", 8, []string{"一二三四五。", "六七八九十"}},
		{"blank chunks left out", "a" + strings.Repeat("\n", 30) + "b", 10, []string{"a\n\n\n\n\n\n\n\n\n", "\nb"}},
		{"entity kept whole", "aaaa &amp;&amp;", 7, []string{"aaaa ", "&amp;", "&amp;"}},
		{"slack link kept whole", "see <https://e.com|the docs> now", 25, []string{"see ", "<https://e.com|the docs> ", "now"}},
		{"whitespace only", " \n\n \t", 2, nil},
		{"empty", "", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitText(tt.s, tt.limit, utf8.RuneCountInString)
			if !slices.Equal(got, tt.want) {
				t.Errorf("SplitText(%q, %d)\n got %q\nwant %q", tt.s, tt.limit, got, tt.want)
			}
		})
	}
}

// checkTextSplit checks the invariants of a SplitText result: every chunk within the limit
// and valid, the bodies a partition of s, the added lines only fences.
func checkTextSplit(t *testing.T, s string, limit int, length func(string) int) []textChunk {
	t.Helper()
	parts := splitText(s, limit, length)
	var whole strings.Builder
	var nonBlank []string
	for i, p := range parts {
		c := p.prefix + p.body + p.suffix
		if n := length(c); n > limit {
			t.Errorf("chunk %d is %d units, limit %d: %.60q", i, n, limit, c)
		}
		if utf8.ValidString(s) && !validUTF16(c) {
			t.Errorf("chunk %d is not valid UTF-8/UTF-16: %q", i, c)
		}
		if p.prefix != "" && (!strings.HasSuffix(p.prefix, "\n") || !strings.ContainsAny(strings.TrimLeft(p.prefix, " \t")[:1], "`~")) {
			t.Errorf("chunk %d prefix %q is not a fence line", i, p.prefix)
		}
		if sfx := strings.TrimLeft(p.suffix, "\n \t"); p.suffix != "" && strings.Trim(sfx, "`~") != "" {
			t.Errorf("chunk %d suffix %q is not a fence line", i, p.suffix)
		}
		whole.WriteString(p.body)
		if strings.TrimSpace(c) != "" {
			nonBlank = append(nonBlank, c)
		}
	}
	if whole.String() != s {
		t.Errorf("chunk bodies do not add up to the input:\n got %q\nwant %q", whole.String(), s)
	}
	if got := SplitText(s, limit, length); !slices.Equal(got, nonBlank) {
		t.Errorf("SplitText differs from its parts")
	}
	return parts
}

func TestSplitTextUnicode(t *testing.T) {
	family := "👨‍👩‍👧‍👦"
	tests := []struct {
		name  string
		s     string
		limit int
		unit  string // every chunk must be made of whole copies of unit
	}{
		{"cjk", strings.Repeat("汉字かなカナ한국어", 1500), 4096, ""},
		{"emoji odd limit", strings.Repeat("😀", 5000), 4095, "😀"},
		{"emoji and ascii", strings.Repeat("a😀", 3000), 4095, ""},
		{"zwj families", strings.Repeat(family, 50), 100, family},
		{"flags", strings.Repeat("🇯🇵", 100), 9, "🇯🇵"},
		{"skin tones", strings.Repeat("👍🏽", 100), 7, "👍🏽"},
		{"combining accents", strings.Repeat("e\u0301", 1000), 7, "e\u0301"},
		{"crlf", strings.Repeat("ab\r\n", 100), 7, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := checkTextSplit(t, tt.s, tt.limit, UTF16Len)
			if len(parts) < 2 {
				t.Fatalf("expected a split, got %d chunk", len(parts))
			}
			for i, p := range parts {
				if tt.unit != "" && strings.ReplaceAll(p.body, tt.unit, "") != "" {
					t.Errorf("chunk %d cuts through %q: starts %q ends %q", i, tt.unit,
						firstRune(p.body), []rune(p.body)[len([]rune(p.body))-1])
				}
				if strings.HasPrefix(p.body, "\n") && strings.HasSuffix(parts[max(i-1, 0)].body, "\r") {
					t.Errorf("chunk %d splits a CRLF", i)
				}
			}
		})
	}
}

func TestSplitTextFences(t *testing.T) {
	var code strings.Builder
	for i := range 300 {
		fmt.Fprintf(&code, "print(%d)  # line %d\n", i, i)
	}
	tests := []struct {
		name, s, reopen, close string
	}{
		{"backticks with info", "intro\n\n```python title=\"x\"\n" + code.String() + "```\n\noutro", "```python title=\"x\"\n", "```"},
		{"tildes", "intro\n\n~~~~\n" + code.String() + "~~~~\n", "~~~~\n", "~~~~"},
		{"in a list item", "- item\n\n  ```sh\n" + strings.ReplaceAll(code.String(), "print", "  echo") + "  ```\n", "  ```sh\n", "  ```"},
		{"unclosed", "```\n" + code.String(), "```\n", "```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const limit = 1000
			parts := checkTextSplit(t, tt.s, limit, utf8.RuneCountInString)
			if len(parts) < 3 {
				t.Fatalf("expected at least 3 chunks, got %d", len(parts))
			}
			for i, p := range parts {
				c := p.prefix + p.body + p.suffix
				if i > 0 && p.prefix != tt.reopen {
					t.Errorf("chunk %d starts %.40q, want the fence reopened as %q", i, c, tt.reopen)
				}
				last := i == len(parts)-1
				if !last && !strings.HasSuffix(c, "\n"+tt.close) {
					t.Errorf("chunk %d ends %q, want the fence closed", i, c[len(c)-20:])
				}
				if !last && strings.Count(c, tt.close) != 2 {
					t.Errorf("chunk %d has %d fence lines, want 2", i, strings.Count(c, tt.close))
				}
			}
		})
	}
}

func TestSplitTextTinyLimit(t *testing.T) {
	// The fence lines alone exceed the limit: the text is still split within it.
	s := "```go\n" + strings.Repeat("x", 40) + "\n```"
	checkTextSplit(t, s, 5, utf8.RuneCountInString)
	// A limit smaller than one character still makes progress.
	if got := SplitText("😀😀", 1, UTF16Len); !slices.Equal(got, []string{"😀", "😀"}) {
		t.Errorf("SplitText with limit 1 = %q", got)
	}
}

// checkHTMLSplit checks the invariants of a SplitHTML result and returns the chunks.
func checkHTMLSplit(t *testing.T, html string, limit int) []string {
	t.Helper()
	chunks := SplitHTML(html, limit)
	for i, c := range chunks {
		if n := UTF16Len(c); n > limit {
			t.Errorf("chunk %d is %d UTF-16 units, limit %d", i, n, limit)
		}
		if err := checkTelegramHTML(c); err != nil {
			t.Errorf("chunk %d is not valid Telegram HTML: %v\n%s", i, err, c)
		}
		if !validUTF16(c) {
			t.Errorf("chunk %d is not valid UTF-16", i)
		}
		if !hasVisibleText(c) {
			t.Errorf("chunk %d has no visible text: %q", i, c)
		}
		for _, tag := range []string{"b", "i", "s", "code", "pre", "blockquote"} {
			if strings.Contains(c, "<"+tag+"></"+tag+">") {
				t.Errorf("chunk %d has an empty <%s>", i, tag)
			}
		}
	}
	return chunks
}

func TestSplitHTMLLongReply(t *testing.T) {
	md := longReply(9000)
	if n := utf8.RuneCountInString(md); n < 9000 {
		t.Fatalf("reply is %d characters", n)
	}
	html := TelegramHTML(md)
	if UTF16Len(html) <= 2*4096 {
		t.Fatalf("HTML is only %d units; the test wants at least three chunks", UTF16Len(html))
	}
	chunks := checkHTMLSplit(t, html, 4096)
	parts := splitHTML(html, 4096)
	if len(chunks) < 3 || len(parts) != len(chunks) {
		t.Fatalf("%d chunks from %d parts", len(chunks), len(parts))
	}
	var whole strings.Builder
	for i, p := range parts {
		if chunks[i] != p.prefix+p.body+p.suffix {
			t.Errorf("chunk %d is not prefix+body+suffix", i)
		}
		if strings.Contains(p.prefix, "</") || (p.prefix != "" && !strings.HasPrefix(p.prefix, "<")) {
			t.Errorf("chunk %d prefix %q is not opening tags", i, p.prefix)
		}
		if strings.Count(p.suffix, "<") != strings.Count(p.suffix, "</") {
			t.Errorf("chunk %d suffix %q is not closing tags", i, p.suffix)
		}
		whole.WriteString(p.body)
	}
	if whole.String() != html {
		t.Error("after removing the reopened and closed tags the chunks do not add up to the whole")
	}
}

func TestSplitHTML(t *testing.T) {
	longCode := TelegramHTML("```go\n" + strings.Repeat("fmt.Println(\"a < b\")\n", 300) + "```")
	hugeLink := `<a href="https://e.com/` + strings.Repeat("a", 3000) + `">` + strings.Repeat("link text ", 500) + "</a>"
	tests := []struct {
		name  string
		html  string
		limit int
		check func(t *testing.T, chunks []string)
	}{
		{"fits", "<b>short</b>", 4096, func(t *testing.T, c []string) {
			if !slices.Equal(c, []string{"<b>short</b>"}) {
				t.Errorf("got %q", c)
			}
		}},
		{"blank", "<b> </b>\n\n", 4096, func(t *testing.T, c []string) {
			if c != nil {
				t.Errorf("got %q", c)
			}
		}},
		{"code block reopened", longCode, 1000, func(t *testing.T, c []string) {
			for i, chunk := range c {
				if !strings.HasPrefix(chunk, `<pre><code class="language-go">`) || !strings.HasSuffix(chunk, "</code></pre>") {
					t.Errorf("chunk %d is not a whole code block: %.50q ... %q", i, chunk, chunk[len(chunk)-20:])
				}
				if i < len(c)-1 && !strings.HasSuffix(chunk, "\n</code></pre>") {
					t.Errorf("chunk %d is not cut at a line end", i)
				}
			}
		}},
		{"nested tags reopened in order", "<b><i>" + strings.Repeat("word ", 100) + "</i></b>", 100, func(t *testing.T, c []string) {
			for i, chunk := range c {
				if !strings.HasPrefix(chunk, "<b><i>") || !strings.HasSuffix(chunk, "</i></b>") {
					t.Errorf("chunk %d = %q", i, chunk)
				}
			}
		}},
		{"entities whole", strings.Repeat("&amp;&lt;&#128512;", 50), 13, func(t *testing.T, c []string) {
			if got := strings.Join(c, ""); got != strings.Repeat("&amp;&lt;&#128512;", 50) {
				t.Errorf("entities changed: %q", got)
			}
		}},
		{"emoji odd limit", "<i>" + strings.Repeat("😀", 100) + "</i>", 15, nil},
		{"huge link dropped at splits", hugeLink, 4096, func(t *testing.T, c []string) {
			var text strings.Builder
			for _, chunk := range c {
				text.WriteString(stripTags(chunk))
			}
			if text.String() != strings.Repeat("link text ", 500) {
				t.Errorf("link text lost")
			}
		}},
		{"words preferred", strings.Repeat("abcdefghi ", 30), 50, func(t *testing.T, c []string) {
			for i, chunk := range c[:len(c)-1] {
				if !strings.HasSuffix(chunk, " ") {
					t.Errorf("chunk %d = %q does not end at a word", i, chunk)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := checkHTMLSplit(t, tt.html, tt.limit)
			if tt.check != nil {
				tt.check(t, chunks)
			}
		})
	}
}

// stripTags removes the tags from HTML written by TelegramHTML, where every '<' starts one.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func removeSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

func FuzzSplitHTML(f *testing.F) {
	f.Add(longReply(3000), uint16(500))
	f.Add(tableMD, uint16(40))
	f.Add("**a _b ~~c `d` e~~ f_ g** "+strings.Repeat("x ", 100), uint16(10))
	f.Add("> "+strings.Repeat("quote [l](https://e.com/aaaaaaaaaaaaaaaaaaaaaaaaa) ", 20), uint16(60))
	f.Add("```\n"+strings.Repeat("&<>\n", 100)+"```", uint16(33))
	f.Fuzz(func(t *testing.T, md string, lim uint16) {
		limit := 32 + int(lim)%4096
		html := TelegramHTML(md)
		chunks := SplitHTML(html, limit)
		for i, c := range chunks {
			if n := UTF16Len(c); n > limit {
				t.Fatalf("chunk %d is %d units, limit %d", i, n, limit)
			}
			if err := checkTelegramHTML(c); err != nil {
				t.Fatalf("chunk %d of %q (limit %d) is not valid: %v\n%q", i, html, limit, err, c)
			}
		}
		var text strings.Builder
		for _, p := range splitHTML(html, limit) {
			text.WriteString(stripTags(p.body))
		}
		if got, want := removeSpace(text.String()), removeSpace(stripTags(html)); got != want {
			t.Fatalf("text changed by splitting at %d:\n got %q\nwant %q", limit, got, want)
		}
	})
}

func FuzzSplitText(f *testing.F) {
	f.Add(longReply(2000), uint16(300))
	f.Add("```go\n"+strings.Repeat("line\n", 50)+"```\ntext", uint16(20))
	f.Add(strings.Repeat("👨‍👩‍👧‍👦🇯🇵e\u0301", 30), uint16(5))
	f.Add("~~~\n```\n~~~\n", uint16(3))
	f.Fuzz(func(t *testing.T, s string, lim uint16) {
		limit := 2 + int(lim)%3000
		checkTextSplit(t, s, limit, UTF16Len)
	})
}

func BenchmarkSplitHTML(b *testing.B) {
	html := TelegramHTML(longReply(9000))
	b.SetBytes(int64(len(html)))
	var chunks []string
	for b.Loop() {
		chunks = SplitHTML(html, 4096)
	}
	b.ReportMetric(float64(len(chunks)), "chunks/op")
}

func BenchmarkSplitText(b *testing.B) {
	md := longReply(9000)
	b.SetBytes(int64(len(md)))
	var chunks []string
	for b.Loop() {
		chunks = SplitText(md, 2000, utf8.RuneCountInString)
	}
	b.ReportMetric(float64(len(chunks)), "chunks/op")
}
