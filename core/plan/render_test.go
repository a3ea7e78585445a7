package plan

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

func TestSlug(t *testing.T) {
	long := strings.Repeat("word ", 40) // 200 characters
	cases := []struct {
		title, want string
	}{
		{"Docs cleanup", "docs-cleanup"},
		{"  Add a CHANGELOG!  ", "add-a-changelog"},
		{"Fix  --  the__build...now", "fix-the-build-now"},
		{"v2.0: release/notes (draft)", "v2-0-release-notes-draft"},
		{"Café au lait", "caf-au-lait"},
		{"naïve façade", "nave-faade"},
		{"日本語", "untitled"},
		{"日本語 docs", "docs"},
		{"🔥🔥🔥", "untitled"},
		{"fix🔥bug", "fix-bug"},
		{"👩‍👩‍👧 family ❤️ plan", "family-plan"},
		{"docs — cleanup", "docs-cleanup"},
		{"", "untitled"},
		{"   ", "untitled"},
		{"---", "untitled"},
		{"../../etc/passwd", "etc-passwd"},
		{"a/b\\c:d*e?f\"g<h>i|j", "a-b-c-d-e-f-g-h-i-j"},
		{"\x00\x01 nul", "nul"},
		{long, strings.TrimSuffix(strings.Repeat("word-", 10), "-")},                            // 49 chars, cut at a "-"
		{strings.Repeat("a", 200), strings.Repeat("a", 50)},                                     // no boundary: hard cut
		{strings.Repeat("a", 50) + " b", strings.Repeat("a", 50)},                               // the boundary right after the limit
		{"x " + strings.Repeat("a", 60), "x"},                                                   // only boundary is early
		{strings.Repeat("ab-", 16) + "cd", strings.Repeat("ab-", 16) + "cd"},                    // exactly 50
		{strings.Repeat("ab-", 16) + "cde", strings.TrimSuffix(strings.Repeat("ab-", 16), "-")}, // 51 -> cut
	}
	for _, tc := range cases {
		t.Run(tc.title, func(t *testing.T) {
			got := slug(tc.title)
			if got != tc.want {
				t.Errorf("slug(%q) = %q, want %q", tc.title, got, tc.want)
			}
			if len(got) > maxSlugLen || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.Contains(got, "--") {
				t.Errorf("slug(%q) = %q breaks the slug rules", tc.title, got)
			}
			if strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Errorf("slug(%q) = %q has characters outside [a-z0-9-]", tc.title, got)
			}
		})
	}
}

func TestEscapeMarkdownExact(t *testing.T) {
	const z = "\u200b"
	cases := []struct{ in, want string }{
		{"plain words", "plain words"},
		{"# Approved", `\# Approved`},
		{"## Decision", `\## Decision`},
		{"- [x] done", `\- \[x\] done`},
		{"+ item", `\+ item`},
		{"* item", `\* item`},
		{"> quote", `\> quote`},
		{"1. first", `1\. first`},
		{"12) twelfth", `12\) twelfth`},
		{"version 1.2", "version 1.2"},
		{"===", `\===`},
		{"---", `\---`},
		{"```go", "\\`\\`\\`go"},
		{"~~~", `\~\~\~`},
		{"a | b", `a \| b`},
		{"<script>x</script>", `\<script\>x\</script\>`},
		{"[link](http://x)", `\[link\](http://x)`},
		{"![img](x)", `!\[img\](x)`},
		{"**bold** and *em*", `\*\*bold\*\* and \*em\*`},
		{"_em_ and __strong__", `\_em\_ and \_\_strong\_\_`},
		{"update_plan and snake_case_name", "update_plan and snake_case_name"},
		{`back\slash \# \*`, `back\\slash \\# \\\*`},
		{"@everyone look", "@" + z + "everyone look"},
		{"hey @here", "hey @" + z + "here"},
		{"ping <@123> and <@&456> and <@!789>", `ping \<@` + z + `123\> and \<@` + z + `&456\> and \<@` + z + `!789\>`},
		{"<!channel> <!here>", `\<!` + z + `channel\> \<!` + z + `here\>`},
		{"mail alice@example.com", "mail alice@example.com"},
		{"lone @ sign", "lone @ sign"},
		{"&#64;everyone &amp; R&D & co", `\&#64;everyone \&amp; R&D & co`},
		{"line one\nline two\r\n\tthree", "line one line two three"},
		{"  # after spaces", `\# after spaces`},
		{"bidi \u202eevil\u202c text", "bidi evil text"},
		{"bell\a and nul\x00", "bell and nul"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := EscapeMarkdown(tc.in); got != tc.want {
			t.Errorf("EscapeMarkdown(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// mdParser parses like the chat adapters do (CommonMark plus the GFM extensions that change
// structure or emphasis), so the tests check what a reader would see.
func mdParser() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))
}

// EscapeMarkdown output, placed where the plan file places model text, must render as that
// text and nothing else.
func TestEscapeMarkdownRendersAsText(t *testing.T) {
	inputs := []string{
		"# Heading", "###### six", "#hashtag", "- item", "-- dashes", "+ item", "* item", "> quote", ">> nested",
		"1. one", "1) one", "123456789. big", "===", "---", "***", "___", "- - -", "```", "~~~", "~~strike~~", "~single~",
		"| a | b |", "|---|---|", "<div>html</div>", "<!-- comment -->", "<http://autolink.example>", "<a@b.c>",
		"[text](http://x)", "[ref]: http://x", "![img](src)", "[^note]", "**bold**", "*em*", "_em_", "__strong__",
		"a*b*c", "a_b_c", "`code`", "``double``", `\`, `ends with \`, `\\`, `\*not\*`, "&amp;", "&#35; not a heading",
		"&#x40;everyone", "&copy; 2026", "&;", "R&D", "x < y > z", "a\nb", "    indented code", "\tTabbed",
		"- [x] Approved by the admin", "@everyone", "@here now", "hi <@123>", "<@&42>", "<!channel>", "a@b.c",
		"2026-11-30", "3.14 is pi", "e.g. this", "[x] done", "[ ] open", "emoji 🔥 ok", "日本語の計画",
		"trailing spaces   ", "hard break\\", "*", "_", "#", "-", "+", "1.", "=", "<", "&", "!", "![",
	}
	contexts := []struct {
		name, prefix, open, close string
	}{
		{"paragraph", "", "<p>", "</p>\n"},
		{"heading", "# ", "<h1>", "</h1>\n"},
		{"bullet", "- ", "<ul>\n<li>", "</li>\n</ul>\n"},
		{"task", "- [ ] ", `<ul>` + "\n" + `<li><input disabled="" type="checkbox"> `, "</li>\n</ul>\n"},
		{"nested task", "- [x] step\n  - [ ] ", "<ul>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> step\n<ul>\n<li><input disabled=\"\" type=\"checkbox\"> ", "</li>\n</ul>\n</li>\n</ul>\n"},
	}
	md := mdParser()
	for _, in := range inputs {
		visible := strings.ReplaceAll(strings.Join(strings.Fields(in), " "), "\u200b", "")
		for _, c := range contexts {
			t.Run(c.name+" "+in, func(t *testing.T) {
				esc := EscapeMarkdown(in)
				var out bytes.Buffer
				if err := md.Convert([]byte(c.prefix+esc), &out); err != nil {
					t.Fatal(err)
				}
				got := out.String()
				if !strings.HasPrefix(got, c.open) || !strings.HasSuffix(got, c.close) {
					t.Fatalf("%q escaped as %q renders as %q: not a single %s", in, esc, got, c.name)
				}
				inner := strings.TrimSuffix(strings.TrimPrefix(got, c.open), c.close)
				if strings.ContainsAny(inner, "<>") {
					t.Fatalf("%q escaped as %q renders markup: %q", in, esc, got)
				}
				if shown := strings.ReplaceAll(html.UnescapeString(inner), "\u200b", ""); shown != visible {
					t.Errorf("%q escaped as %q shows %q, want %q", in, esc, shown, visible)
				}
			})
		}
	}
}

func TestChecklist(t *testing.T) {
	steps := []Step{
		{ID: "1", Text: "Reword the README", Status: StepCompleted},
		{ID: "2", Text: "Fix links", Status: StepInProgress},
		{ID: "3", Text: "# Spelling @everyone", Status: StepPending},
		{ID: "4", Text: "Old idea\nsecond line", Status: StepCancelled},
	}
	want := "[x] Reword the README\n[>] Fix links\n[ ] \\# Spelling @\u200beveryone\n[~] Old idea second line"
	if got := Checklist(steps); got != want {
		t.Errorf("Checklist\n got %q\nwant %q", got, want)
	}
	if got := Checklist(nil); got != "" {
		t.Errorf("Checklist(nil) = %q, want empty", got)
	}
}
