package plan

import (
	"strings"
	"testing"
)

// judgeOK is a plan that passes the judge; each case below breaks one thing.
func judgeOK() Body {
	return Body{
		Title:   "Docs cleanup",
		Summary: "Reword the README and fix links.",
		Steps: []Step{
			{ID: "1", Text: "Reword the README introduction", Status: StepPending, AcceptanceCriteria: []string{"under 100 words"}},
			{ID: "2", Text: "Fix broken links", Status: StepPending},
		},
		Assumptions:  []string{"docs are markdown"},
		Risks:        []Risk{{Risk: "links break", Mitigation: "run the checker"}},
		Verification: Words("make linkcheck"),
		Scope: Scope{
			AllowedPaths:   []string{"docs/**", "README.md", "CHANGELOG.md", "*.md", "docs/[a-c]*.md", "v1..v2/notes.md"},
			ForbiddenPaths: []string{".git/**"},
		},
		References: []string{"https://example.invalid/style"},
	}
}

func TestJudgePlanAccepts(t *testing.T) {
	if err := Judge(judgeOK()); err != nil {
		t.Fatalf("Judge(valid plan) = %v", err)
	}
	b := judgeOK()
	b.Title = strings.Repeat("é", maxTitleLen) // characters, not bytes
	b.Steps = planSteps(manyTexts(MaxSteps)...)
	b.Steps[3].Status = StepInProgress
	b.Summary = strings.Repeat("x", MaxFieldLen)
	if err := Judge(b); err != nil {
		t.Fatalf("Judge(plan at every limit) = %v", err)
	}
	minimal := Body{Title: "T", Steps: planSteps("a")}
	if err := Judge(minimal); err != nil {
		t.Fatalf("Judge(minimal plan) = %v", err)
	}
}

func TestJudgePlanProblems(t *testing.T) {
	long := strings.Repeat("x", MaxFieldLen+1)
	cases := []struct {
		name   string
		change func(*Body)
		want   []string
	}{
		{"no title", func(b *Body) { b.Title = "  " }, []string{"no title"}},
		{"long title", func(b *Body) { b.Title = strings.Repeat("a", 81) }, []string{"title is 81 characters long", "at most 80"}},
		{"no steps", func(b *Body) { b.Steps = nil }, []string{"no steps", `"plan"`}},
		{"too many steps", func(b *Body) { b.Steps = planSteps(manyTexts(MaxSteps + 1)...) }, []string{"51 steps", "at most 50"}},
		{"empty step text", func(b *Body) { b.Steps[1].Text = " " }, []string{"step 2 has no text"}},
		{"duplicate step text", func(b *Body) { b.Steps[1].Text = "reword the README  introduction" }, []string{"steps 1 and 2 have the same text", "update_plan matches steps by their text"}},
		{"two in progress", func(b *Body) { b.Steps[0].Status, b.Steps[1].Status = StepInProgress, StepInProgress }, []string{"steps 1 and 2 are in_progress", "at most one"}},
		{"bad step status", func(b *Body) { b.Steps[0].Status = "done" }, []string{`step 1 has status "done"`}},
		{"missing step status", func(b *Body) { b.Steps[1].Status = "" }, []string{`step 2 has status ""`}},
		{"long step", func(b *Body) { b.Steps[0].Text = long }, []string{"step 1 is 2001 characters long", "at most 2000"}},
		{"long summary", func(b *Body) { b.Summary = long }, []string{"the summary is 2001 characters long"}},
		{"empty criterion", func(b *Body) { b.Steps[0].AcceptanceCriteria = []string{"ok", ""} }, []string{"step 1 acceptance criterion 2 is empty"}},
		{"long criterion", func(b *Body) { b.Steps[0].AcceptanceCriteria = []string{long} }, []string{"step 1 acceptance criterion 1 is 2001 characters long"}},
		{"too many criteria", func(b *Body) { b.Steps[0].AcceptanceCriteria = manyTexts(51) }, []string{"there are 51 step 1 acceptance criteria"}},
		{"empty assumption", func(b *Body) { b.Assumptions = []string{""} }, []string{"assumption 1 is empty"}},
		{"long reference", func(b *Body) { b.References = []string{"a", long} }, []string{"reference 2 is 2001 characters long"}},
		{"long verification", func(b *Body) { b.Verification = Words(long) }, []string{"verification 1 is 2001"}},
		{"too many assumptions", func(b *Body) { b.Assumptions = manyTexts(51) }, []string{"there are 51 assumptions"}},
		{"risk without text", func(b *Body) { b.Risks = []Risk{{Mitigation: "m"}} }, []string{"risk 1 has no description"}},
		{"long mitigation", func(b *Body) { b.Risks[0].Mitigation = long }, []string{"risk 1 mitigation is 2001"}},
		{"too many risks", func(b *Body) {
			b.Risks = nil
			for range 51 {
				b.Risks = append(b.Risks, Risk{Risk: "r"})
			}
		}, []string{"there are 51 risks"}},
		{"too many scope paths", func(b *Body) { b.Scope.AllowedPaths = manyTexts(51) }, []string{"there are 51 scope.allowed_paths entries"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := judgeOK()
			tc.change(&b)
			err := Judge(b)
			if err == nil {
				t.Fatalf("Judge = nil, want problems")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestJudgePlanScope(t *testing.T) {
	cases := []struct {
		path string
		want string // "" = accepted
	}{
		{"docs/**", ""},
		{"src/*.go", ""},
		{"**", ""},
		{"**/*.pem", ""},
		{"{docs,notes}/*.md", ""},
		{"secrets/*", ""},
		{".", `use "**" for the whole workspace`},
		{"./", `use "**" for the whole workspace`},
		{"./docs", `not a clean relative path; write "docs"`},
		{"docs/", `not a clean relative path; write "docs"`},
		{"docs//a.md", `not a clean relative path; write "docs/a.md"`},
		{"docs/./a.md", `not a clean relative path; write "docs/a.md"`},
		{"keys/**\u200b", "U+200B (ZERO WIDTH SPACE)"},
		{"\u202etxt.exe", "U+202E (RIGHT-TO-LEFT OVERRIDE)"},
		{"a\u2066b", "U+2066"},
		{"a\ufeffb", "U+FEFF"},
		{"a\u00adb", "U+00AD (SOFT HYPHEN)"},
		{"a\x1b[2Jb", "U+001B (ESC)"},
		{"a\tb", "U+0009 (TAB)"},
		{"a\x7fb", "U+007F (DEL)"},
		{"a\u0085b", "U+0085"},
		{"docs\nsecrets", "line break"},
		{"docs\rsecrets", "line break"},
		{"a\u2028b", "line break"},
		{"a\u2029b", "line break"},
		{"a\xffb", "not valid UTF-8"},
		{"{a,b}/{c,d}/{e,f}.md", ""},
		{"{a,b}/{c,d}/{e,f}/{g,h}.md", "has more than 3 { } groups"},
		{"{" + strings.Repeat("a,", 21) + "b}", "or 20 alternatives"},
		{"a..b/c", ""},
		{"docs/[!.]*", ""},
		{"/etc/passwd", "is absolute"},
		{`\\server\share`, "is absolute"},
		{`C:\Windows`, "is absolute"},
		{"c:/x", "is absolute"},
		{"~/notes", `starts with "~"`},
		{"~root", `starts with "~"`},
		{"..", `contains ".."`},
		{"../outside", `contains ".."`},
		{"docs/../../outside", `contains ".."`},
		{`docs\..\x`, `contains ".."`},
		{"[", "not a valid glob"},
		{"docs/[a-", "not a valid glob"},
		{`docs\`, "not a valid glob"},
		{"", "is empty"},
		{" docs", "leading or trailing spaces"},
		{"a\x00b", "U+0000 (NUL)"},
	}
	for _, tc := range cases {
		for _, field := range []string{"allowed_paths", "forbidden_paths"} {
			t.Run(field+" "+tc.path, func(t *testing.T) {
				b := judgeOK()
				if field == "allowed_paths" {
					b.Scope.AllowedPaths = []string{tc.path}
				} else {
					b.Scope.ForbiddenPaths = []string{tc.path}
				}
				err := Judge(b)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("Judge refused %q: %v", tc.path, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("Judge accepted %q", tc.path)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "scope."+field) {
					t.Errorf("error %q should name scope.%s and contain %q", err, field, tc.want)
				}
			})
		}
	}
}

func TestJudgePlanListsEveryProblem(t *testing.T) {
	b := judgeOK()
	b.Title = ""
	b.Steps[0].Text = ""
	b.Steps[0].Status, b.Steps[1].Status = StepInProgress, StepInProgress
	b.Scope.AllowedPaths = []string{"/abs", "../up"}
	err := Judge(b)
	if err == nil {
		t.Fatal("Judge = nil, want problems")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"no title", "step 1 has no text", "steps 1 and 2 are in_progress", `"/abs" is absolute`, `"../up" contains ".."`}
	if len(lines) != len(want) {
		t.Fatalf("got %d problem lines, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want it to contain %q", i+1, lines[i], w)
		}
	}
}

// TestJudgePlanInvisibleText: what a person reads in the plan must be what is stored, so
// control and format characters and invalid UTF-8 are refused in every text field, and
// line breaks everywhere but the summary.
func TestJudgePlanInvisibleText(t *testing.T) {
	bad := []struct {
		text, want string
	}{
		{"Fix\u200b docs", "U+200B (ZERO WIDTH SPACE)"},
		{"Fix \u202edocs", "U+202E (RIGHT-TO-LEFT OVERRIDE)"},
		{"Fix \x1b]52;c;aGk=\x07docs", "U+001B (ESC)"},
		{"Fix\x00docs", "U+0000 (NUL)"},
		{"Fix \u200ddocs", "U+200D (ZERO WIDTH JOINER)"},
		{"Fix \xc3(docs", "not valid UTF-8"},
		{"Fix\ndocs", "line break"},
		{"Fix\u2028docs", "line break"},
	}
	fields := []struct {
		name string
		set  func(*Body, string)
	}{
		{"the title", func(b *Body, s string) { b.Title = s }},
		{"step 2", func(b *Body, s string) { b.Steps[1].Text = s }},
		{"step 1 acceptance criterion 1", func(b *Body, s string) { b.Steps[0].AcceptanceCriteria = []string{s} }},
		{"assumption 1", func(b *Body, s string) { b.Assumptions = []string{s} }},
		{"verification 1", func(b *Body, s string) { b.Verification = Words(s) }},
		{"reference 1", func(b *Body, s string) { b.References = []string{s} }},
		{"risk 1", func(b *Body, s string) { b.Risks[0].Risk = s }},
		{"risk 1 mitigation", func(b *Body, s string) { b.Risks[0].Mitigation = s }},
	}
	for _, f := range fields {
		for _, c := range bad {
			b := judgeOK()
			f.set(&b, c.text)
			err := Judge(b)
			if err == nil {
				t.Errorf("%s %q accepted", f.name, c.text)
				continue
			}
			if !strings.Contains(err.Error(), f.name+" ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %q: error %q should name the field and contain %q", f.name, c.text, err, c.want)
			}
		}
	}
	// The summary may span lines (and tabs and CRLF are harmless there), nothing else.
	b := judgeOK()
	b.Summary = "First line.\r\n\n\tSecond paragraph."
	if err := Judge(b); err != nil {
		t.Errorf("multi-line summary refused: %v", err)
	}
	for _, c := range bad[:6] {
		b := judgeOK()
		b.Summary = c.text
		if err := Judge(b); err == nil || !strings.Contains(err.Error(), "the summary ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("summary %q: error %v, want %q", c.text, err, c.want)
		}
	}
	// Visible non-ASCII text is fine.
	b = judgeOK()
	b.Title = "Übersetzung: 日本語 ✓"
	if err := Judge(b); err != nil {
		t.Errorf("visible Unicode refused: %v", err)
	}
}
