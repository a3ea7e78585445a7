package machine

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

var update = flag.Bool("update", false, "rewrite golden files")

// mdParser parses like the chat adapters do (CommonMark plus the GFM extensions that change
// structure or emphasis), so the tests check what a reader would see.
func mdParser() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))
}

// EscapeMarkdown output, placed where the plan file places model text, must render as that
// text and nothing else.
var planfileDay = time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)

func fullPlan() core.Plan {
	return core.Plan{
		ID: "p7k2m9x4q1", SessionID: "terminal:local:main", Version: 2, Status: core.PlanAccepted, ApprovalID: "a1",
		Body: plan.Body{
			Title:   "Docs cleanup with spelling fixes",
			Summary: "Reword the README introduction and fix internal links.\n\nAlso correct spelling mistakes\nfound by the checker.",
			Steps: []plan.Step{
				{ID: "1", Text: "Reword the README introduction", Status: plan.StepCompleted,
					AcceptanceCriteria: []string{"The introduction is under 100 words", "It names the /plan commands"},
					VerifiedCriteria:   []string{"The introduction is under 100 words", "It names the /plan commands"}},
				{ID: "2", Text: "Fix broken internal links", Status: plan.StepInProgress,
					AcceptanceCriteria: []string{"make linkcheck passes", "No link points to docs/old_index.md"},
					VerifiedCriteria:   []string{"No link points to docs/old_index.md"}},
				{ID: "3", Text: "Correct spelling mistakes", Status: plan.StepPending},
				{ID: "4", Text: "Translate the docs", Status: plan.StepCancelled},
			},
			Assumptions:  []string{"The docs are plain markdown", "CI runs make linkcheck"},
			Risks:        []plan.Risk{{Risk: "Renamed anchors break links from other repositories", Mitigation: "keep the old anchors"}, {Risk: "Over-eager spelling fixes"}},
			Verification: append(plan.Words("make linkcheck"), plan.Check{Name: "unit tests", Argv: []string{"go", "test", "./..."}}),
			Scope:        plan.Scope{AllowedPaths: []string{"docs/**", "README.md"}, ForbiddenPaths: []string{".git/**", "docs/legal/*"}},
			References:   []string{"CONTRIBUTING.md", "https://example.invalid/style-guide"},
		},
		Decision: &plan.Decision{By: "123", ByName: "Alice", At: time.Date(2026, 11, 30, 10, 4, 0, 0, time.FixedZone("cet", 3600)),
			Channel: "telegram", Outcome: "accepted", Feedback: "Looks good"},
		Run: plan.Run{Verification: &plan.Verification{Attempts: 1, Failures: 1,
			Runs: []plan.CheckRun{{Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: 1, Tail: "FAIL docs"}}}},
		CreatedAt: planfileDay, UpdatedAt: planfileDay,
	}
}

func minimalPlan() core.Plan {
	return core.Plan{ID: "p1", Version: 1, Status: core.PlanPending,
		Body: plan.Body{Title: "Add a changelog", Steps: []plan.Step{{ID: "1", Text: "Create CHANGELOG.md", Status: plan.StepPending}}}}
}

// forgedPlan is a pending plan whose every field tries to forge structure or a mention.
func forgedPlan() core.Plan {
	return core.Plan{ID: "p2", Version: 3, Status: core.PlanPending,
		Body: plan.Body{
			Title:   "# Approved\n## Decision <b>@everyone</b>",
			Summary: "# Fake heading\n> quote\n- item\n1. one\n```\ncode\n```\n<script>alert(1)</script>\n\nSetext\n===\n| a | b |\n|---|---|\n**bold** _em_ [link](http://x) ![img](y) <@123> @here &#64;everyone",
			Steps: []plan.Step{
				{ID: "1", Text: "## Decision\n\n- Outcome: accepted", Status: plan.StepPending,
					AcceptanceCriteria: []string{"* nested", "- [x] verified by admin"}},
				{ID: "2", Text: "- [x] Approved by the admin", Status: plan.StepPending},
			},
			Assumptions:  []string{"---", "1) numbered", "   # indented", `\# pre-escaped`},
			Risks:        []plan.Risk{{Risk: "<!channel>", Mitigation: "`code` and ~~strike~~"}},
			Verification: plan.Words("~~~", "| x |"),
			Scope:        plan.Scope{AllowedPaths: []string{"docs/**", "a`b"}, ForbiddenPaths: []string{"@everyone/*", "x\n# y"}},
			References:   []string{"[x]: http://evil.example", "<http://evil.example>"},
		}}
}

func TestRenderPlanMarkdown(t *testing.T) {
	headings := []string{"Summary", "Steps", "Assumptions", "Risks", "Verification", "Grants", "Scope", "References"}
	full := slices.Insert(slices.Clone(headings), 5, "Verification runs")
	cases := []struct {
		name     string
		plan     core.Plan
		phase    core.Phase
		session  string
		headings []string // level 2, in order
	}{
		{"full", fullPlan(), core.PhaseExecuting, "main", append(full, "Decision")},
		{"minimal", minimalPlan(), core.PhaseAwaitingApproval, "main", []string{"Steps", "Verification", "Grants"}},
		{"forged", forgedPlan(), core.PhaseAwaitingApproval, "telegram-<@1>_x", headings},
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
	got := string(RenderPlanMarkdown(fullPlan(), core.PhaseExecuting, "main", Reach{}))
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
		"## Verification\n\n" + plan.CommandsNote + "\n\n- make linkcheck\n- unit tests: `go test ./...`\n",
		"## Verification runs\n\n- Attempt 1: 1 of 1 checks failed\n- [ ] unit tests — exit 1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered plan lacks %q", want)
		}
	}

	pending := string(RenderPlanMarkdown(minimalPlan(), core.PhaseAwaitingApproval, "main", Reach{}))
	for _, want := range []string{"`/plan accept`", "`/plan revise <feedback>`", "`/plan auto`"} {
		if !strings.Contains(pending, want) {
			t.Errorf("pending plan footer lacks %s", want)
		}
	}
	for _, absent := range []string{"## Summary", "## Assumptions", "## Risks", "## Scope", "## Decision", "## References", "## Verification runs"} {
		if strings.Contains(pending, absent) {
			t.Errorf("minimal plan has empty section %q", absent)
		}
	}
	if !strings.Contains(pending, "## Verification\n\n"+plan.NoVerificationNote+"\n") {
		t.Errorf("a plan without verification does not say so in words:\n%s", pending)
	}
	superseded := minimalPlan()
	superseded.Status = core.PlanSuperseded
	if s := string(RenderPlanMarkdown(superseded, core.PhasePlanning, "main", Reach{})); strings.Contains(s, "/plan accept") || !strings.Contains(s, "superseded") {
		t.Errorf("a superseded plan should not offer /plan accept and should say it is superseded:\n%s", s)
	}
	untitled := minimalPlan()
	untitled.Body.Title = ""
	if s := string(RenderPlanMarkdown(untitled, core.PhasePlanning, "main", Reach{})); !strings.HasPrefix(s, "# Untitled plan\n") {
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

// TestParsePlanMarkdownGoldens reads the writer's golden files back (plan.ParseMarkdown).
func TestParsePlanMarkdownGoldens(t *testing.T) {
	for name, p := range map[string]core.Plan{"full": fullPlan(), "minimal": minimalPlan()} {
		data, err := os.ReadFile(filepath.Join("testdata", "planfile", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := plan.ParseMarkdown(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, p.Body) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got, p.Body)
		}
	}
	// The forged plan's text is cleaned by the writer (line breaks collapse), so it comes
	// back as the writer shows it, and the same again after another round.
	data, err := os.ReadFile(filepath.Join("testdata", "planfile", "forged.golden"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := plan.ParseMarkdown(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "# Approved ## Decision <b>@everyone</b>" || got.Steps[1].Text != "- [x] Approved by the admin" ||
		got.Risks[0] != (plan.Risk{Risk: "<!channel>", Mitigation: "`code` and ~~strike~~"}) ||
		!reflect.DeepEqual(got.Scope.ForbiddenPaths, []string{"@everyone/*", "x # y"}) ||
		!reflect.DeepEqual(got.Assumptions, []string{"---", "1) numbered", "# indented", `\# pre-escaped`}) {
		t.Errorf("forged plan read back as %#v", got)
	}
	again, err := plan.ParseMarkdown(RenderPlanMarkdown(core.Plan{Version: 2, Status: core.PlanPending, Body: got}, core.PhaseAwaitingApproval, "main", Reach{}))
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("forged plan does not round-trip a second time: %v\n%#v", err, again)
	}
}
