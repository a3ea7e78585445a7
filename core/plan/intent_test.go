package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// The plan's intent: its risk level, non-goals and expected outcome, as exit_plan_mode
// takes them and the judge checks them.

func TestParseProposalIntent(t *testing.T) {
	b, err := ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"}],"risk":" High ",` +
		`"non_goals":[" no API change ",""],"expected_outcome":"  the docs build  "}`))
	if err != nil {
		t.Fatal(err)
	}
	if b.Risk != RiskHigh || len(b.NonGoals) != 1 || b.NonGoals[0] != "no API change" || b.ExpectedOutcome != "the docs build" {
		t.Fatalf("body = %+v", b)
	}
	if err := Judge(b); err != nil {
		t.Fatalf("judge: %v", err)
	}
	// The intent is part of the content: another level is another plan.
	low := b
	low.Risk = RiskLow
	if Hash(low) == Hash(b) {
		t.Fatal("the risk level does not change the hash")
	}
	none := b
	none.Risk, none.NonGoals, none.ExpectedOutcome = "", nil, ""
	if Hash(none) != Hash(Body{Title: "T", Steps: b.Steps}) {
		t.Fatal("a plan without intent hashes differently from before")
	}
}

func TestParseProposalIntentHints(t *testing.T) {
	_, err := ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"}],"risk_level":"low","outcome":"x"}`))
	if err == nil {
		t.Fatal("unknown fields accepted")
	}
	for _, want := range []string{`"risk_level"`, `did you mean "risk"?`, `"outcome"`, `did you mean "expected_outcome"?`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %s:\n%v", want, err)
		}
	}
	_, err = ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"}],"non_goals":"none"}`))
	if err == nil || !strings.Contains(err.Error(), `"non_goals" must be an array`) {
		t.Fatalf("non_goals as a string: %v", err)
	}
}

func TestJudgeIntent(t *testing.T) {
	base := Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}}
	for _, tc := range []struct {
		name string
		edit func(*Body)
		want string // "" accepts
	}{
		{"no intent at all", func(*Body) {}, ""},
		{"each level", func(b *Body) { b.Risk = RiskMedium }, ""},
		{"a sentence as the level", func(b *Body) { b.Risk = "data loss if the migration fails" },
			`risk is "data loss if the migration fails"; use one of "low", "medium", "high" (describe what could go wrong in "risks"`},
		{"an unknown level", func(b *Body) { b.Risk = "critical" }, `risk is "critical"; use one of`},
		{"an empty non-goal", func(b *Body) { b.NonGoals = []string{"x", " "} }, "non-goal 2 is empty"},
		{"a non-goal over two lines", func(b *Body) { b.NonGoals = []string{"a\nb"} }, "non-goal 1 contains a line break"},
		{"too many non-goals", func(b *Body) { b.NonGoals = make([]string, maxListItems+1); fill(b.NonGoals) }, "there are 51 non_goals; at most 50"},
		{"a long outcome", func(b *Body) { b.ExpectedOutcome = strings.Repeat("x", MaxFieldLen+1) }, "the expected outcome is 2001 characters long"},
		{"a hidden character in the outcome", func(b *Body) { b.ExpectedOutcome = "done\u202e" }, "the expected outcome contains the invisible or control character U+202E"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			tc.edit(&b)
			err := Judge(b)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func fill(items []string) {
	for i := range items {
		items[i] = "item"
	}
}

func TestPlanFileIntentRoundTrip(t *testing.T) {
	b := Body{Title: "T", Summary: "s", ExpectedOutcome: "The docs build.\n\nNo link is broken.",
		Steps:    []Step{{ID: "1", Text: "a", Status: StepPending}},
		NonGoals: []string{"no API change", "leave *vendor* alone"}, Risk: RiskMedium}
	md := string(Render(File{Body: b, Version: 1, Status: "pending", Phase: "awaiting_approval", Session: "s1"}))
	for _, want := range []string{"## Expected outcome\n\nThe docs build.\n\nNo link is broken.\n", "## Non-goals\n\n- no API change\n- leave \\*vendor\\* alone\n", "## Risk level\n\nmedium\n"} {
		if !strings.Contains(md, want) {
			t.Fatalf("file lacks %q:\n%s", want, md)
		}
	}
	got, err := ParseMarkdown([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if got.Risk != b.Risk || got.ExpectedOutcome != b.ExpectedOutcome || strings.Join(got.NonGoals, "|") != strings.Join(b.NonGoals, "|") {
		t.Fatalf("read back %+v", got)
	}
	// Without intent the file has none of these sections.
	plain := string(Render(File{Body: Body{Title: "T", Steps: b.Steps}, Version: 1}))
	for _, h := range []string{"Expected outcome", "Non-goals", "Risk level"} {
		if strings.Contains(plain, h) {
			t.Errorf("a plan without intent shows %q", h)
		}
	}
}

func TestPlanFileRiskLevelRefusals(t *testing.T) {
	for _, tc := range []struct{ level, want string }{
		{"critical", `line 5: the risk level is "critical"; write low, medium or high`},
		{"high\nlow", "line 6: the risk level is one line: low, medium or high"},
	} {
		md := "# T\n\n## Risk level\n\n" + tc.level + "\n\n## Steps\n\n- [ ] a\n"
		if _, err := ParseMarkdown([]byte(md)); err == nil || err.Error() != tc.want {
			t.Errorf("level %q: got %v, want %q", tc.level, err, tc.want)
		}
	}
	b, err := ParseMarkdown([]byte("# T\n\n## Risk level\n\nHigh\n\n## Steps\n\n- [ ] a\n"))
	if err != nil || b.Risk != RiskHigh {
		t.Fatalf("High: %v, %q", err, b.Risk)
	}
}

func TestCompareIntent(t *testing.T) {
	old := Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}, Risk: RiskLow}
	cur := old
	cur.Risk, cur.NonGoals, cur.ExpectedOutcome = RiskHigh, []string{"x"}, "y"
	d := Compare(old, cur)
	if !strings.Contains(d.Summary(), "risk low → high") {
		t.Errorf("summary = %q", d.Summary())
	}
	for _, part := range []string{"non-goals", "expected outcome"} {
		if !strings.Contains(strings.Join(d.Changed, ", "), part) {
			t.Errorf("changed = %v, lacks %s", d.Changed, part)
		}
	}
	if md := d.Markdown(); !strings.Contains(md, "- Risk low → high\n") {
		t.Errorf("markdown = %q", md)
	}
}

func TestCompareRiskOnly(t *testing.T) {
	old := Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}}
	cur := old
	cur.Risk = RiskLow
	d := Compare(old, cur)
	if d.Summary() != "Changes from v0: risk not stated → low" || strings.Contains(d.Markdown(), "wording") {
		t.Fatalf("summary %q, markdown %q", d.Summary(), d.Markdown())
	}
}
