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

func TestRiskCounted(t *testing.T) {
	for in, want := range map[RiskLevel]RiskLevel{"": RiskHigh, RiskLow: RiskLow, RiskMedium: RiskMedium, RiskHigh: RiskHigh} {
		if got := in.Counted(); got != want {
			t.Errorf("%q counts as %q, want %q", in, got, want)
		}
	}
}
