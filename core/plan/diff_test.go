package plan

import (
	"reflect"
	"strings"
	"testing"
)

func stepsOf(texts ...string) []Step {
	out := make([]Step, len(texts))
	for i, t := range texts {
		out[i] = Step{Text: t, Status: StepPending}
	}
	return out
}

func TestDiffPlans(t *testing.T) {
	readme := Scope{AllowedPaths: []string{"README.md"}}
	cases := []struct {
		name     string
		old, cur Body
		want     Diff
		summary  string
	}{
		{"added only", Body{Steps: stepsOf("Fix the typos", "Fix the link")}, Body{Steps: stepsOf("Fix the typos", "Fix the link", "Start a CHANGELOG.md")},
			Diff{Added: []string{"Start a CHANGELOG.md"}}, "Changes from v1: + Start a CHANGELOG.md"},
		{"reworded in place", Body{Steps: stepsOf("Fix the typos in README", "Deploy")}, Body{Steps: stepsOf("Fix all the typos in README.md", "Deploy")},
			Diff{Reworded: []Reword{{"Fix the typos in README", "Fix all the typos in README.md"}}}, "Changes from v1: ~ Fix all the typos in README.md"},
		{"removed and added, not similar", Body{Steps: stepsOf("Write the migration", "Deploy")}, Body{Steps: stepsOf("Update the docs", "Deploy")},
			Diff{Added: []string{"Update the docs"}, Removed: []string{"Write the migration"}}, "Changes from v1: + Update the docs · − Write the migration"},
		{"moved and reworded elsewhere", Body{Steps: stepsOf("Run the linter on core", "Write tests")}, Body{Steps: stepsOf("Write tests", "Add a step", "Run the linter on all of core")},
			Diff{Added: []string{"Add a step"}, Reworded: []Reword{{"Run the linter on core", "Run the linter on all of core"}}}, "Changes from v1: + Add a step · ~ Run the linter on all of core"},
		{"case and spaces are the same step", Body{Steps: stepsOf("fix  typos")}, Body{Steps: stepsOf("Fix typos")},
			Diff{Details: true, Changed: []string{"step order"}}, "Changes from v1: same steps; changed: step order"}, // as versionDiff says it
		{"scope widened", Body{Steps: stepsOf("a"), Scope: readme}, Body{Steps: stepsOf("a"), Scope: Scope{AllowedPaths: []string{"README.md", "docs/**"}}},
			Diff{Scope: "scope widened: README.md → README.md, docs/**"}, "Changes from v1: scope widened: README.md → README.md, docs/**"},
		{"tools", Body{Steps: stepsOf("a"), Scope: Scope{AllowedPaths: []string{"a"}, AllowedTools: []string{"fs__rm"}}}, Body{Steps: stepsOf("a"), Scope: Scope{AllowedPaths: []string{"a"}, AllowedTools: []string{"fs__write"}}},
			Diff{Tools: ToolDelta{Added: []string{"fs__write"}, Removed: []string{"fs__rm"}}}, "Changes from v1: tools added: fs__write · tools removed: fs__rm"},
		{"criteria changed", Body{Steps: stepsOf("a")}, Body{Steps: []Step{{Text: "a", Status: StepPending, AcceptanceCriteria: []string{"c"}}}},
			Diff{Details: true, Changed: []string{"acceptance criteria"}}, "Changes from v1: same steps; changed: acceptance criteria"},
		{"summary changed", Body{Summary: "x", Steps: stepsOf("a")}, Body{Summary: "y", Steps: stepsOf("a")},
			Diff{Details: true, Changed: []string{"summary"}}, "Changes from v1: same steps; changed: summary"},
		{"nothing", Body{Steps: stepsOf("a"), Scope: readme}, Body{Steps: stepsOf("a"), Scope: readme}, Diff{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.old, tc.cur)
			if !reflect.DeepEqual(d, tc.want) {
				t.Errorf("Compare =\n %#v\nwant\n %#v", d, tc.want)
			}
			d.From = 1
			if got := d.Summary(); got != tc.summary {
				t.Errorf("Summary = %q, want %q", got, tc.summary)
			}
			if d.Empty() != (tc.summary == "") || (d.Markdown() == "") != d.Empty() {
				t.Errorf("Empty = %v, Markdown = %q", d.Empty(), d.Markdown())
			}
		})
	}
}

// TestDiffSummaryKeepsTheOldChatLine keeps the chat line proposal replies had before
// they used Compare, where steps were only added or removed, or the scope or other parts
// changed, so those transcripts read the same; only rewordings ("~ ...") and MCP tools
// read differently.
func TestDiffSummaryKeepsTheOldChatLine(t *testing.T) {
	old := Body{Steps: stepsOf("Fix the typos in README.md", "Fix the broken guide link"), Scope: Scope{AllowedPaths: []string{"README.md"}}}
	for _, tc := range []struct {
		cur  Body
		want string
	}{
		{Body{Steps: stepsOf("Fix the typos in README.md", "Fix the broken guide link", "Start a CHANGELOG.md"), Scope: Scope{AllowedPaths: []string{"README.md", "CHANGELOG.md"}}},
			"+ Start a CHANGELOG.md · scope widened: README.md → README.md, CHANGELOG.md"},
		{Body{Steps: stepsOf("Fix the typos in README.md"), Scope: old.Scope}, "− Fix the broken guide link"},
		{Body{Steps: stepsOf("Fix the broken guide link", "Translate everything to French", "Fix the typos in README.md"), Scope: old.Scope},
			"+ Translate everything to French"},
		{Body{Summary: "new", Steps: old.Steps, Scope: old.Scope, Assumptions: []string{"a"}}, "same steps; changed: summary, assumptions"},
	} {
		d := Compare(old, tc.cur)
		d.From = 1
		if got, want := d.Summary(), "Changes from v1: "+tc.want; got != want {
			t.Errorf("Summary = %q, want %q", got, want)
		}
	}
}

func TestDiffMarkdown(t *testing.T) {
	d := Compare(Body{Steps: stepsOf("Fix the typos in README", "# Old *one*"), Scope: Scope{AllowedPaths: []string{"README.md"}}},
		Body{Steps: stepsOf("Fix all the typos in README", "Ping @everyone"), Scope: Scope{AllowedPaths: []string{"**"}}})
	d.From = 2
	want := "\n## Changes from v2\n\n- Added: Ping @\u200beveryone\n- Reworded: Fix the typos in README → Fix all the typos in README\n" +
		"- Removed: \\# Old \\*one\\*\n- Scope widened: README.md → the whole workspace\n"
	if got := d.Markdown(); got != want {
		t.Errorf("Markdown =\n%q\nwant\n%q", got, want)
	}
	// The section sits after the status line, and the parser skips it.
	p := File{Version: 3, Status: "pending", Phase: "awaiting_approval", Session: "main", Changes: &d,
		Body: Body{Title: "T", Steps: stepsOf("Fix all the typos in README", "Ping @everyone"), Scope: Scope{AllowedPaths: []string{"**"}}}}
	file := string(Render(p))
	if !strings.Contains(file, "session: main\n\n## Changes from v2\n\n- Added:") {
		t.Errorf("changes section misplaced:\n%s", file)
	}
	body, err := ParseMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	p.Body.Steps[0].ID, p.Body.Steps[1].ID = "1", "2"
	if !reflect.DeepEqual(body, p.Body) {
		t.Errorf("parsed %#v, want %#v", body, p.Body)
	}
}
