package plan_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/plan/plantest"
)

// TestParsePlanMarkdownRoundTrip is the property: parsing what the writer writes gives
// back the plan, for random plans full of text the writer has to escape.
func TestParsePlanMarkdownRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 13))
	for i := range 3000 {
		want := plantest.Body(r)
		file := plan.RenderPending(want, nil)
		got, err := plan.ParseMarkdown(file)
		if err != nil {
			t.Fatalf("plan %d: %v\n%s", i, err, file)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %d does not round-trip\nfile:\n%s\n got %#v\nwant %#v", i, file, got, want)
		}
	}
}

// TestParsePlanMarkdownEdited reads files as a person writes them: other bullets, no
// status line or footer, loose spacing, unescaped punctuation.
func TestParsePlanMarkdownEdited(t *testing.T) {
	file := "\ufeff\n# Tidy  the docs\r\n\r\n## Steps\n\n* [ ] Fix *all* typos\n    - criterion without a box\n  - [X] checked one\n- [x]   Done already\n\n" +
		"## Risks\n\n- Broken links — run the checker\n- — only a mitigation\n\n## Scope\n\nallowed\n- docs/**\n- `*.md`\n\n" +
		"## Changes from v1\n\n- Added: whatever\n\n## Decision\n\n- Outcome: accepted\n"
	got, err := plan.ParseMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Body{Title: "Tidy the docs",
		Steps: []plan.Step{
			{ID: "1", Text: "Fix *all* typos", Status: plan.StepPending, AcceptanceCriteria: []string{"criterion without a box", "checked one"}, VerifiedCriteria: []string{"checked one"}},
			{ID: "2", Text: "Done already", Status: plan.StepCompleted},
		},
		Risks: []plan.Risk{{Risk: "Broken links", Mitigation: "run the checker"}, {Mitigation: "only a mitigation"}},
		Scope: plan.Scope{AllowedPaths: []string{"docs/**", "*.md"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %#v\nwant %#v", got, want)
	}
}

func TestParsePlanMarkdownErrors(t *testing.T) {
	big := "# T\n\n## Summary\n\n" + strings.Repeat("a", plan.MaxFileBytes)
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
			_, err := plan.ParseMarkdown([]byte(tc.file))
			var pe *plan.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
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
	got, err := plan.ParseMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 1 || got.Steps[0].Text != "a" {
		t.Errorf("got %#v", got)
	}
}

func FuzzParseMarkdown(f *testing.F) {
	for _, name := range []string{"full", "minimal", "forged"} {
		if data, err := os.ReadFile(filepath.Join("..", "testdata", "planfile", name+".golden")); err == nil {
			f.Add(data)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(plan.RenderPending(plantest.Body(r), nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := plan.ParseMarkdown(data)
		if err != nil {
			var pe *plan.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		file := plan.RenderPending(body, nil)
		again, err := plan.ParseMarkdown(file)
		if err != nil {
			t.Fatalf("the rendering of an accepted file does not parse: %v\n%s", err, file)
		}
		if !reflect.DeepEqual(again, body) {
			t.Fatalf("an accepted file changes on a round trip\nfile:\n%s\n got %#v\nwant %#v", file, again, body)
		}
	})
}
