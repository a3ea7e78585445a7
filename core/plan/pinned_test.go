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

// The pinned contract is a function of the plan: equal plans give equal bytes, a step's
// progress does not change it (Progress shows that), and the limits a plan leaves unset
// are named as unset.
func TestPinnedIsStableAndShowsProgress(t *testing.T) {
	a, b := Pinned(2, sixSteps()), Pinned(2, sixSteps())
	if a != b {
		t.Fatalf("the same plan state pins different text:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"ACCEPTED PLAN v2", "PLAN.md", "PLAN.json", "PLAN PROGRESS", "Title: Add rate limiting", "1. Read the router", "criteria: Read the router is done; go vet passes",
		"may change: api/**, docs/api.md", "never touch: secrets/**", "files changed at most 6, lines changed at most 300", "Verification: the limit holds under load, run: api tests, (plangate runs the commands before the plan is done; all must pass)", "Stops:"} {
		if !strings.Contains(a, want) {
			t.Errorf("pinned plan lacks %q:\n%s", want, a)
		}
	}
	moved := sixSteps()
	moved.Steps[0].Status, moved.Steps[0].VerifiedCriteria = StepCompleted, []string{"Read the router is done"}
	moved.Steps[1].Status = StepInProgress
	moved.Steps[2].Status, moved.Steps[2].CancelReason = StepCancelled, "not needed"
	if m := Pinned(2, moved); m != a {
		t.Errorf("a step's progress changed the pinned contract:\n%s\n---\n%s", a, m)
	}
	p := Progress(2, moved)
	for _, want := range []string{"PLAN PROGRESS v2", "not a message from a person", "\n1. [x] Read the router", "verified: Read the router is done", "\n2. [>] Add the limiter", "cancelled: not needed", "\n4. [ ] Test"} {
		if !strings.Contains(p, want) {
			t.Errorf("progress lacks %q:\n%s", want, p)
		}
	}
	bare := Pinned(1, Body{Title: "T", Steps: []Step{{ID: "a", Text: "Do it", Status: "bogus"}}})
	if p := Progress(1, Body{Steps: []Step{{ID: "a", Text: "Do it", Status: "bogus"}}}); !strings.Contains(p, "1. [ ] a: Do it") {
		t.Errorf("a step of an unknown status is not shown pending: %s", p)
	}
	for _, want := range []string{"1. a: Do it", "may change: no files", "not limited", "Verification: none declared"} {
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
