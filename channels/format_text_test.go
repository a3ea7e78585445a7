package channels

import (
	"strings"
	"testing"
)

func TestPlainText(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"styles", "**b** *i* ~~s~~ `c`", "b i s c"},
		{"heading", "# Title\n\nbody", "Title\n\nbody"},
		{"link", "[docs](https://e.com)", "docs (https://e.com)"},
		{"autolink", "<https://e.com>", "https://e.com"},
		{"email", "<a@b.c>", "a@b.c"},
		{"javascript link", "[x](javascript:y)", "x"},
		{"link labelled with its url", "[https://e.com](https://e.com)", "https://e.com"},
		{"empty link label", "[](https://e.com)", "https://e.com"},
		{"image", "![a cat](https://e.com/c.png)", "a cat (https://e.com/c.png)"},
		{"code block", "```go\na\n\nb\n```", "    a\n\n    b"},
		{"quote", "> a\n>\n> b", "│ a\n│\n│ b"},
		{"list", "- a\n- [x] b\n\n3. c", "• a\n• [x] b\n\n3. c"},
		{"raw html", "<b>x</b>", "<b>x</b>"},
		{"escapes", `\*x\*`, "*x*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlainText(tt.md); got != tt.want {
				t.Errorf("PlainText(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

func TestPlainTextLeavesNoMarkup(t *testing.T) {
	got := PlainText(richReply)
	for _, m := range []string{"**", "__", "~~", "`", "#", "](", "<", ">", "|", "---"} {
		if strings.Contains(got, m) {
			i := strings.Index(got, m)
			t.Errorf("plain text contains %q: ...%s...", m, got[max(0, i-30):min(len(got), i+30)])
		}
	}
	for _, keep := range []string{"◦ ", "1. ", "    func", "Plan", "https://example.com/docs"} {
		if !strings.Contains(got, keep) {
			t.Errorf("plain text lacks %q", keep)
		}
	}
}

// richReply uses every construct a model is likely to write.
const richReply = `# Plan

Here is **the plan** for _today_, with ~~old~~ new ` + "`code`" + ` and a [link](https://example.com/docs).

## Steps

1. Read the config
2. Change **one** thing
   - nested *detail*
   - [ ] unchecked
   - [x] checked

> A quoted note
> over two lines.

` + "```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```" + `

| step | owner |
|------|-------|
| 1 | 小明 🚀 |

Done — 完成了。 😀👍🏽
`
