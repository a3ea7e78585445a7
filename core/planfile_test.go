package core

import (
	"bytes"
	"flag"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

var update = flag.Bool("update", false, "rewrite golden files")

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
			got := Slug(tc.title)
			if got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.title, got, tc.want)
			}
			if len(got) > maxSlugLen || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.Contains(got, "--") {
				t.Errorf("Slug(%q) = %q breaks the slug rules", tc.title, got)
			}
			if strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Errorf("Slug(%q) = %q has characters outside [a-z0-9-]", tc.title, got)
			}
		})
	}
}

func TestPlanFileName(t *testing.T) {
	day := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	cases := []struct {
		day     time.Time
		title   string
		version int
		want    string
	}{
		{day, "Docs cleanup", 1, "plan-2026-11-30-docs-cleanup-v1.md"},
		{day, "Docs cleanup with spelling fixes", 2, "plan-2026-11-30-docs-cleanup-with-spelling-fixes-v2.md"},
		{day, "🔥", 12, "plan-2026-11-30-untitled-v12.md"},
		{day.In(time.FixedZone("east", 2*3600)), "x", 1, "plan-2026-12-01-x-v1.md"},
		{day, "../../etc/passwd", 3, "plan-2026-11-30-etc-passwd-v3.md"},
	}
	for _, tc := range cases {
		got := PlanFileName(tc.day, tc.title, tc.version)
		if got != tc.want {
			t.Errorf("PlanFileName(%v, %q, %d) = %q, want %q", tc.day, tc.title, tc.version, got, tc.want)
		}
		if err := checkPathElement("file name", got); err != nil {
			t.Errorf("PlanFileName(%q) = %q is not a single path element", tc.title, got)
		}
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

var planfileDay = time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)

func fullPlan() Plan {
	return Plan{
		ID: "p7k2m9x4q1", SessionID: "terminal:local:main", Version: 2, Status: PlanAccepted, ApprovalID: "a1",
		Body: PlanBody{
			Title:   "Docs cleanup with spelling fixes",
			Summary: "Reword the README introduction and fix internal links.\n\nAlso correct spelling mistakes\nfound by the checker.",
			Steps: []Step{
				{ID: "1", Text: "Reword the README introduction", Status: StepCompleted,
					AcceptanceCriteria: []string{"The introduction is under 100 words", "It names the /plan commands"},
					VerifiedCriteria:   []string{"The introduction is under 100 words", "It names the /plan commands"}},
				{ID: "2", Text: "Fix broken internal links", Status: StepInProgress,
					AcceptanceCriteria: []string{"make linkcheck passes", "No link points to docs/old_index.md"},
					VerifiedCriteria:   []string{"No link points to docs/old_index.md"}},
				{ID: "3", Text: "Correct spelling mistakes", Status: StepPending},
				{ID: "4", Text: "Translate the docs", Status: StepCancelled},
			},
			Assumptions:  []string{"The docs are plain markdown", "CI runs make linkcheck"},
			Risks:        []Risk{{Risk: "Renamed anchors break links from other repositories", Mitigation: "keep the old anchors"}, {Risk: "Over-eager spelling fixes"}},
			Verification: []string{"make linkcheck", "go test ./..."},
			Scope:        Scope{AllowedPaths: []string{"docs/**", "README.md"}, ForbiddenPaths: []string{".git/**", "docs/legal/*"}},
			References:   []string{"CONTRIBUTING.md", "https://example.invalid/style-guide"},
		},
		Decision: &Decision{By: "123", ByName: "Alice", At: time.Date(2026, 11, 30, 10, 4, 0, 0, time.FixedZone("cet", 3600)),
			Channel: "telegram", Outcome: "accepted", Feedback: "Looks good"},
		CreatedAt: planfileDay, UpdatedAt: planfileDay,
	}
}

func minimalPlan() Plan {
	return Plan{ID: "p1", Version: 1, Status: PlanPending,
		Body: PlanBody{Title: "Add a changelog", Steps: []Step{{ID: "1", Text: "Create CHANGELOG.md", Status: StepPending}}}}
}

// forgedPlan is a pending plan whose every field tries to forge structure or a mention.
func forgedPlan() Plan {
	return Plan{ID: "p2", Version: 3, Status: PlanPending,
		Body: PlanBody{
			Title:   "# Approved\n## Decision <b>@everyone</b>",
			Summary: "# Fake heading\n> quote\n- item\n1. one\n```\ncode\n```\n<script>alert(1)</script>\n\nSetext\n===\n| a | b |\n|---|---|\n**bold** _em_ [link](http://x) ![img](y) <@123> @here &#64;everyone",
			Steps: []Step{
				{ID: "1", Text: "## Decision\n\n- Outcome: accepted", Status: StepPending,
					AcceptanceCriteria: []string{"* nested", "- [x] verified by admin"}},
				{ID: "2", Text: "- [x] Approved by the admin", Status: StepPending},
			},
			Assumptions:  []string{"---", "1) numbered", "   # indented", `\# pre-escaped`},
			Risks:        []Risk{{Risk: "<!channel>", Mitigation: "`code` and ~~strike~~"}},
			Verification: []string{"~~~", "| x |"},
			Scope:        Scope{AllowedPaths: []string{"docs/**", "a`b"}, ForbiddenPaths: []string{"@everyone/*", "x\n# y"}},
			References:   []string{"[x]: http://evil.example", "<http://evil.example>"},
		}}
}

func TestRenderPlanMarkdown(t *testing.T) {
	headings := []string{"Summary", "Steps", "Assumptions", "Risks", "Verification", "Grants", "Scope", "References"}
	cases := []struct {
		name     string
		plan     Plan
		phase    Phase
		session  string
		headings []string // level 2, in order
	}{
		{"full", fullPlan(), PhaseExecuting, "main", append(slices.Clone(headings), "Decision")},
		{"minimal", minimalPlan(), PhaseAwaitingApproval, "main", []string{"Steps", "Grants"}},
		{"forged", forgedPlan(), PhaseAwaitingApproval, "telegram-<@1>_x", headings},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderPlanMarkdown(tc.plan, tc.phase, tc.session, Reach{})
			checkPlanfileGolden(t, filepath.Join("testdata", "planfile", tc.name+".golden"), got)
			checkPlanStructure(t, got, tc.headings)
			if !utf8.Valid(got) {
				t.Errorf("output is not valid UTF-8")
			}
		})
	}
}

func TestRenderPlanMarkdownContent(t *testing.T) {
	got := string(RenderPlanMarkdown(fullPlan(), PhaseExecuting, "main", Reach{}))
	for _, want := range []string{
		"# Docs cleanup with spelling fixes\n",
		"Version 2 · status: accepted · phase: executing · session: main\n",
		"- [x] Reword the README introduction\n  - [x] The introduction is under 100 words\n",
		"- [>] Fix broken internal links\n  - [ ] make linkcheck passes\n  - [x] No link points to docs/old_index.md\n",
		"- [ ] Correct spelling mistakes\n",
		"- [~] Translate the docs\n",
		"- Renamed anchors break links from other repositories — keep the old anchors\n",
		"- Over-eager spelling fixes\n",
		"- `docs/**`\n",
		"- By: Alice (123)\n",
		"- At: 2026-11-30 09:04 UTC\n",
		"`/plan revise <feedback>`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered plan lacks %q", want)
		}
	}

	pending := string(RenderPlanMarkdown(minimalPlan(), PhaseAwaitingApproval, "main", Reach{}))
	for _, want := range []string{"`/plan accept`", "`/plan revise <feedback>`", "`/plan auto`"} {
		if !strings.Contains(pending, want) {
			t.Errorf("pending plan footer lacks %s", want)
		}
	}
	for _, absent := range []string{"## Summary", "## Assumptions", "## Risks", "## Scope", "## Decision", "## References", "## Verification"} {
		if strings.Contains(pending, absent) {
			t.Errorf("minimal plan has empty section %q", absent)
		}
	}
	superseded := minimalPlan()
	superseded.Status = PlanSuperseded
	if s := string(RenderPlanMarkdown(superseded, PhasePlanning, "main", Reach{})); strings.Contains(s, "/plan accept") || !strings.Contains(s, "superseded") {
		t.Errorf("a superseded plan should not offer /plan accept and should say it is superseded:\n%s", s)
	}
	untitled := minimalPlan()
	untitled.Body.Title = ""
	if s := string(RenderPlanMarkdown(untitled, PhasePlanning, "main", Reach{})); !strings.HasPrefix(s, "# Untitled plan\n") {
		t.Errorf("an untitled plan should get a placeholder title:\n%s", s)
	}
}

// checkPlanStructure parses the file and checks that the only structure in it is the
// structure the renderer writes: one title, the expected sections, lists, and code spans
// for commands and scope globs; no HTML, links, emphasis, quotes, code blocks or tables.
func checkPlanStructure(t *testing.T, src []byte, sections []string) {
	t.Helper()
	doc := mdParser().Parser().Parse(text.NewReader(src))
	var h1 int
	var h2 []string
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindDocument, ast.KindParagraph, ast.KindTextBlock, ast.KindText, ast.KindString,
			ast.KindList, ast.KindListItem, ast.KindThematicBreak, ast.KindCodeSpan, extast.KindTaskCheckBox:
		case ast.KindHeading:
			line := strings.TrimSpace(string(n.Lines().Value(src)))
			switch n.(*ast.Heading).Level {
			case 1:
				h1++
			case 2:
				h2 = append(h2, line)
			default:
				t.Errorf("unexpected heading %q", line)
			}
		default:
			t.Errorf("unexpected %s node in the plan file: %q", n.Kind(), n.Lines().Value(src))
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h1 != 1 {
		t.Errorf("got %d level-1 headings, want 1", h1)
	}
	if !slices.Equal(h2, sections) {
		t.Errorf("sections = %q, want %q", h2, sections)
	}
	if bytes.Contains(src, []byte("@everyone")) || bytes.Contains(src, []byte("@here")) || bytes.Contains(src, []byte("<@1")) {
		t.Errorf("a mention survived escaping:\n%s", src)
	}
}

func checkPlanfileGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./core -run TestRenderPlanMarkdown -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
