package core

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// hostile are pieces of text the writer must escape so the file keeps its structure.
var hostile = []string{
	"#", "##", "*", "_", "_em_", "`", "``", "[", "]", "[x]", "<@U123>", "<@&9>", "<!channel>", "@here", "@everyone",
	"a@b.c", "@_x", "- ", "-", "+", "=", "1.", "2)", "10.", "&#64;", "&amp;", "&", "\\", "\\#", "|", "~~", ">", "<b>",
	"—", "&#8212;", "a—b", "(priority: high, complexity: small)", "Version", "---", "Allowed:", "Forbidden:",
	"!", "!", "é", "日本語", "a_b", "x*y", "**bold**", "(", ")", ":", "✓",
}

var plainWords = []string{"fix", "the", "README", "links", "add", "tests", "docs", "update", "CHANGELOG.md", "go", "vet", "step", "make", "API", "v2"}

func genLine(r *rand.Rand) string {
	n := 1 + r.IntN(6)
	parts := make([]string, n)
	for i := range parts {
		if r.IntN(3) == 0 {
			parts[i] = hostile[r.IntN(len(hostile))]
		} else {
			parts[i] = plainWords[r.IntN(len(plainWords))]
		}
	}
	s := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if s == "" {
		return "x"
	}
	return s
}

func genList(r *rand.Rand, max int) []string {
	var out []string
	for range r.IntN(max + 1) {
		out = append(out, genLine(r))
	}
	return out
}

func genBlock(r *rand.Rand) string {
	var paras []string
	for range r.IntN(3) {
		var lines []string
		for range 1 + r.IntN(3) {
			lines = append(lines, genLine(r))
		}
		paras = append(paras, strings.Join(lines, "\n"))
	}
	return strings.Join(paras, "\n\n")
}

var scopeSegments = []string{"docs", "src", "a_b", "*.md", "**", "README.md", "x`y", "@team", "[ab]c", "{a,b}", "é", "cfg", "*", "v1.2"}

func genPaths(r *rand.Rand) []string {
	var out []string
	for range r.IntN(4) {
		var segs []string
		for range 1 + r.IntN(3) {
			segs = append(segs, scopeSegments[r.IntN(len(scopeSegments))])
		}
		if p := strings.Join(segs, "/"); scopePathProblem(p) == "" {
			out = append(out, p)
		}
	}
	return out
}

func genSpec(r *rand.Rand) *ProductSpec {
	if r.IntN(2) == 0 {
		return nil
	}
	sp := &ProductSpec{Overview: genBlock(r), UserStories: genList(r, 3), TechStack: genList(r, 2), DesignDirection: genBlock(r)}
	for range r.IntN(4) {
		sp.Features = append(sp.Features, Feature{Name: genLine(r),
			Priority:   []string{"", "high", "medium", "low"}[r.IntN(4)],
			Complexity: []string{"", "small", "medium", "large"}[r.IntN(4)]})
	}
	return sp
}

// genPlan makes a random plan body in the form the file carries: trimmed single-spaced
// text, step ids "1", "2", ..., verified criteria a subset of the criteria.
func genPlan(r *rand.Rand) PlanBody {
	b := PlanBody{Title: genLine(r), Summary: genBlock(r), Assumptions: genList(r, 3), Verification: genList(r, 2),
		References: genList(r, 2), Spec: genSpec(r),
		Scope: Scope{AllowedPaths: genPaths(r), ForbiddenPaths: genPaths(r)}}
	if r.IntN(3) == 0 {
		b.Scope.AllowedTools = []string{"fs__write_file", "gh__create_issue"}[:1+r.IntN(2)]
	}
	statuses := []StepStatus{StepPending, StepInProgress, StepCompleted, StepCancelled}
	for i := range 1 + r.IntN(5) {
		s := Step{ID: strconv.Itoa(i + 1), Text: genLine(r), Status: statuses[r.IntN(len(statuses))]}
		for _, c := range genList(r, 3) {
			if findCriterion(s.AcceptanceCriteria, c) >= 0 {
				continue
			}
			s.AcceptanceCriteria = append(s.AcceptanceCriteria, c)
			if r.IntN(2) == 0 {
				s.VerifiedCriteria = append(s.VerifiedCriteria, c)
			}
		}
		b.Steps = append(b.Steps, s)
	}
	for range r.IntN(3) {
		rk := Risk{Risk: genLine(r)}
		switch r.IntN(3) {
		case 0:
			rk.Mitigation = genLine(r)
		case 1:
			rk.Risk, rk.Mitigation = "", genLine(r)
		}
		b.Risks = append(b.Risks, rk)
	}
	return b
}

func renderBody(b PlanBody) []byte {
	return RenderPlanMarkdown(Plan{Version: 2, Status: PlanPending, Body: b}, PhaseAwaitingApproval, "main", Reach{})
}

// TestParsePlanMarkdownRoundTrip is the property: parsing what the writer writes gives
// back the plan, for random plans full of text the writer has to escape.
func TestParsePlanMarkdownRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 13))
	for i := range 3000 {
		want := genPlan(r)
		file := renderBody(want)
		got, err := ParsePlanMarkdown(file)
		if err != nil {
			t.Fatalf("plan %d: %v\n%s", i, err, file)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %d does not round-trip\nfile:\n%s\n got %#v\nwant %#v", i, file, got, want)
		}
	}
}

// TestParsePlanMarkdownGoldens reads the writer's golden files back.
func TestParsePlanMarkdownGoldens(t *testing.T) {
	for name, plan := range map[string]Plan{"full": fullPlan(), "minimal": minimalPlan()} {
		data, err := os.ReadFile(filepath.Join("testdata", "planfile", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePlanMarkdown(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, plan.Body) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got, plan.Body)
		}
	}
	// The forged plan's text is cleaned by the writer (line breaks collapse), so it comes
	// back as the writer shows it, and the same again after another round.
	data, err := os.ReadFile(filepath.Join("testdata", "planfile", "forged.golden"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePlanMarkdown(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "# Approved ## Decision <b>@everyone</b>" || got.Steps[1].Text != "- [x] Approved by the admin" ||
		got.Risks[0] != (Risk{Risk: "<!channel>", Mitigation: "`code` and ~~strike~~"}) ||
		!reflect.DeepEqual(got.Scope.ForbiddenPaths, []string{"@everyone/*", "x # y"}) ||
		!reflect.DeepEqual(got.Assumptions, []string{"---", "1) numbered", "# indented", `\# pre-escaped`}) {
		t.Errorf("forged plan read back as %#v", got)
	}
	again, err := ParsePlanMarkdown(renderBody(got))
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("forged plan does not round-trip a second time: %v\n%#v", err, again)
	}
}

// TestParsePlanMarkdownEdited reads files as a person writes them: other bullets, no
// status line or footer, loose spacing, unescaped punctuation.
func TestParsePlanMarkdownEdited(t *testing.T) {
	file := "\ufeff\n# Tidy  the docs\r\n\r\n## Steps\n\n* [ ] Fix *all* typos\n    - criterion without a box\n  - [X] checked one\n- [x]   Done already\n\n" +
		"## Risks\n\n- Broken links — run the checker\n- — only a mitigation\n\n## Scope\n\nallowed\n- docs/**\n- `*.md`\n\n" +
		"## Changes from v1\n\n- Added: whatever\n\n## Decision\n\n- Outcome: accepted\n"
	got, err := ParsePlanMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := PlanBody{Title: "Tidy the docs",
		Steps: []Step{
			{ID: "1", Text: "Fix *all* typos", Status: StepPending, AcceptanceCriteria: []string{"criterion without a box", "checked one"}, VerifiedCriteria: []string{"checked one"}},
			{ID: "2", Text: "Done already", Status: StepCompleted},
		},
		Risks: []Risk{{Risk: "Broken links", Mitigation: "run the checker"}, {Mitigation: "only a mitigation"}},
		Scope: Scope{AllowedPaths: []string{"docs/**", "*.md"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %#v\nwant %#v", got, want)
	}
}

func TestParsePlanMarkdownErrors(t *testing.T) {
	big := "# T\n\n## Summary\n\n" + strings.Repeat("a", MaxPlanFileBytes)
	cases := []struct {
		name, file string
		line       int
		msg        string
	}{
		{"no title", "Just text\n", 1, "starts with its title"},
		{"empty", "\n\n", 0, "has no title"},
		{"empty title", "#   \n", 1, "title is empty"},
		{"step without box", "# T\n\n## Steps\n\n- [ ] one\n- two\n", 6, "a step must be a checklist item like `- [ ] text`"},
		{"unknown box", "# T\n\n## Steps\n\n- [?] one\n", 5, "unknown box [?]"},
		{"empty step", "# T\n\n## Steps\n\n- [ ]\n", 5, "has no text"},
		{"criterion first", "# T\n\n## Steps\n\n  - [ ] c\n", 5, "must follow a step"},
		{"criterion box", "# T\n\n## Steps\n\n- [ ] s\n  - [>] c\n", 6, "not [>]"},
		{"not a step", "# T\n\n## Steps\n\nSome prose\n", 5, "a step must be a checklist item"},
		{"unknown section", "# T\n\n## Timeline\n", 3, `unknown section "Timeline"`},
		{"twice", "# T\n\n## Steps\n\n- [ ] a\n\n## steps\n", 7, "appears twice"},
		{"second title", "# T\n\n## Summary\n\n# Other\n", 5, "one title"},
		{"preamble", "# T\n\nHello there\n", 3, "before the first section"},
		{"list entry", "# T\n\n## Assumptions\n\nnot a bullet\n", 5, "list item"},
		{"scope label", "# T\n\n## Scope\n\n- docs/**\n", 5, "under `Allowed:` or `Forbidden:`"},
		{"scope prose", "# T\n\n## Scope\n\nAllowed:\nwhatever\n", 6, "the scope holds"},
		{"subheading", "# T\n\n## Summary\n\n### Overview\n", 5, "belongs under `## Product spec`"},
		{"spec part", "# T\n\n## Product spec\n\n### Pricing\n", 5, `unknown part "Pricing"`},
		{"spec prose", "# T\n\n## Product spec\n\nloose text\n", 5, "under one of its `###` parts"},
		{"feature", "# T\n\n## Product spec\n\n### Features\n\n- Login\n", 7, "a feature must read"},
		{"feature priority", "# T\n\n## Product spec\n\n### Features\n\n- Login (priority: urgent, complexity: small)\n", 7, `priority "urgent"`},
		{"NUL", "# T\n\n## Summary\n\nab\x00c\n", 5, "U+0000 (NUL)"},
		{"ESC", "# T\x1b[2J\n", 1, "U+001B (ESC)"},
		{"not UTF-8", "# T\n\n## Summary\n\n\xff\xfe\n", 5, "not valid UTF-8"},
		{"too big", big, 0, "at most 256 KB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlanMarkdown([]byte(tc.file))
			var pe *PlanParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *PlanParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("got line %d %q, want line %d containing %q", pe.Line, pe.Msg, tc.line, tc.msg)
			}
			if tc.line > 0 && !strings.HasPrefix(err.Error(), "line "+strconv.Itoa(tc.line)+": ") {
				t.Errorf("Error() = %q does not name the line", err.Error())
			}
		})
	}
}

// TestParsePlanMarkdownIgnoresFooterAndStatus checks that what follows the footer rule
// and the status line never reach the body.
func TestParsePlanMarkdownIgnoresFooterAndStatus(t *testing.T) {
	file := "# T\n\nVersion 9 · status: accepted · phase: executing · session: x\n\n## Steps\n\n- [ ] a\n\n---\n\n## Steps\n\nanything at all\n"
	got, err := ParsePlanMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 1 || got.Steps[0].Text != "a" {
		t.Errorf("got %#v", got)
	}
}

func FuzzParsePlanMarkdown(f *testing.F) {
	for _, name := range []string{"full", "minimal", "forged"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "planfile", name+".golden")); err == nil {
			f.Add(data)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(renderBody(genPlan(r)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := ParsePlanMarkdown(data)
		if err != nil {
			var pe *PlanParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PlanParseError", err)
			}
			return
		}
		file := renderBody(body)
		again, err := ParsePlanMarkdown(file)
		if err != nil {
			t.Fatalf("the rendering of an accepted file does not parse: %v\n%s", err, file)
		}
		if !reflect.DeepEqual(again, body) {
			t.Fatalf("an accepted file changes on a round trip\nfile:\n%s\n got %#v\nwant %#v", file, again, body)
		}
	})
}
