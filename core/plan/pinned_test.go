package plan

import (
	"strings"
	"testing"
)

func sixSteps() Body {
	b := Body{Title: "Add rate limiting to the API", Summary: "Limit each client to 100 requests a minute.",
		Scope:        Scope{AllowedPaths: []string{"api/**", "docs/api.md"}, ForbiddenPaths: []string{"secrets/**"}, MaxFilesChanged: 6, MaxLinesChanged: 300},
		Verification: []Check{{Text: "the limit holds under load"}, {Name: "api tests", Argv: []string{"go", "test", "./api/"}}}}
	for i, s := range []string{"Read the router", "Add the limiter", "Wire it into the router", "Test the limit", "Document the limit", "Run the suite"} {
		b.Steps = append(b.Steps, Step{ID: string(rune('1' + i)), Text: s, Status: StepPending, AcceptanceCriteria: []string{s + " is done", "go vet passes"}})
	}
	return b
}

// The pinned form is a function of the plan state: equal states give equal bytes, a
// step's status shows, and the limits a plan leaves unset are named as unset.
func TestPinnedIsStableAndShowsProgress(t *testing.T) {
	a, b := Pinned(2, sixSteps()), Pinned(2, sixSteps())
	if a != b {
		t.Fatalf("the same plan state pins different text:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"ACCEPTED PLAN v2", "PLAN.md", "PLAN.json", "Title: Add rate limiting", "1. [ ] Read the router", "criteria: Read the router is done; go vet passes",
		"may change: api/**, docs/api.md", "never touch: secrets/**", "files changed at most 6, lines changed at most 300", "Verification: the limit holds under load, run: api tests, (plangate runs the commands before the plan is done; all must pass)", "Stops:"} {
		if !strings.Contains(a, want) {
			t.Errorf("pinned plan lacks %q:\n%s", want, a)
		}
	}
	moved := sixSteps()
	moved.Steps[0].Status, moved.Steps[0].VerifiedCriteria = StepCompleted, []string{"Read the router is done"}
	moved.Steps[1].Status = StepInProgress
	m := Pinned(2, moved)
	for _, want := range []string{"1. [x] Read the router", "verified: Read the router is done", "2. [>] Add the limiter", "3. [ ] Wire"} {
		if !strings.Contains(m, want) {
			t.Errorf("moved plan lacks %q:\n%s", want, m)
		}
	}
	bare := Pinned(1, Body{Title: "T", Steps: []Step{{ID: "a", Text: "Do it", Status: "bogus"}}})
	for _, want := range []string{"1. [ ] a: Do it", "may change: no files", "not limited", "Verification: none declared"} {
		if !strings.Contains(bare, want) {
			t.Errorf("bare plan lacks %q:\n%s", want, bare)
		}
	}
	t.Logf("6-step plan pins %d bytes (about %d tokens at 4 bytes a token)", len(a), len(a)/4)
}

func BenchmarkPinned(b *testing.B) {
	body := sixSteps()
	for b.Loop() {
		_ = Pinned(2, body)
	}
}
