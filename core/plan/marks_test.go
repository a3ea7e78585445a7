package plan_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/plan/plantest"
)

// markedTools are allowed tools for the marked round trip: MCP names, and names that try
// to look like a mark or break out of the code span.
var markedTools = []string{"fs__write_file", "gh__create_issue", "ts__wipe", "(destructive)", "x (destructive)",
	"`a` (destructive)", "`ts__wipe`", "a` (destructive", " ts__pad ", "ts__wipe (destructive)"}

func genMarked(r *rand.Rand) (plan.Body, func(string) bool) {
	b := plantest.Body(r)
	b.Scope.AllowedTools = nil
	seen := map[string]bool{}
	for range r.IntN(5) {
		t := markedTools[r.IntN(len(markedTools))]
		if r.IntN(4) == 0 {
			t = plantest.Line(r)
		}
		if t = strings.TrimSpace(t); t != "" && !seen[t] {
			seen[t] = true
			b.Scope.AllowedTools = append(b.Scope.AllowedTools, t)
		}
	}
	all := r.IntN(2) == 0
	return b, func(tool string) bool { return all || strings.HasSuffix(tool, "wipe") }
}

func TestRenderMarksDestructiveTools(t *testing.T) {
	b := plan.Body{Title: "Wipe", Steps: []plan.Step{{ID: "1", Text: "Wipe it", Status: plan.StepPending}},
		Scope: plan.Scope{AllowedPaths: []string{"ts__wipe"}, AllowedTools: []string{"ts__wipe", "ts__write"}}}
	file := string(plan.RenderPending(b, func(tool string) bool { return tool == "ts__wipe" }))
	if !strings.Contains(file, "Allowed tools:\n\n- `ts__wipe` (destructive)\n- `ts__write`\n") {
		t.Fatalf("destructive tool not marked:\n%s", file)
	}
	if strings.Contains(file, "Allowed:\n\n- `ts__wipe` (destructive)") {
		t.Fatalf("a path was marked as a tool:\n%s", file)
	}
	if plain := string(plan.RenderPending(b, nil)); strings.Contains(plain, "(destructive)") {
		t.Fatalf("Render marked a tool without Destructive:\n%s", plain)
	}
	got, err := plan.ParseMarkdown([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Scope, b.Scope) {
		t.Fatalf("marked scope reads back as %#v, want %#v", got.Scope, b.Scope)
	}
	// A person who edits the file may leave the mark, or space it differently.
	edited := strings.Replace(file, "- `ts__wipe` (destructive)", "- `ts__wipe`   (destructive)", 1)
	if got, err := plan.ParseMarkdown([]byte(edited)); err != nil || !reflect.DeepEqual(got.Scope.AllowedTools, b.Scope.AllowedTools) {
		t.Fatalf("edited mark: %v, %#v", err, got.Scope.AllowedTools)
	}
}

// TestParsePlanMarkdownMarkedRoundTrip is the round-trip property with marks: the mark
// is the renderer's, the parsed plan is the plan, whatever the tools are called.
func TestParsePlanMarkdownMarkedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 15))
	for i := range 3000 {
		want, destructive := genMarked(r)
		file := plan.RenderPending(want, destructive)
		got, err := plan.ParseMarkdown(file)
		if err != nil {
			t.Fatalf("plan %d: %v\n%s", i, err, file)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %d does not round-trip\nfile:\n%s\n got %#v\nwant %#v", i, file, got.Scope, want.Scope)
		}
	}
}

// FuzzParsePlanMarkdownMarked: whatever file is accepted reads back the same after a
// rendering that marks every allowed tool.
func FuzzParsePlanMarkdownMarked(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		b, d := genMarked(r)
		f.Add(plan.RenderPending(b, d))
	}
	f.Add([]byte("# T\n\n## Steps\n\n- [ ] a\n\n## Scope\n\nAllowed tools:\n\n- `x` (destructive)\n- `y`(destructive)\n"))
	all := func(string) bool { return true }
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := plan.ParseMarkdown(data)
		if err != nil {
			var pe *plan.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		file := plan.RenderPending(body, all)
		again, err := plan.ParseMarkdown(file)
		if err != nil {
			t.Fatalf("the marked rendering of an accepted file does not parse: %v\n%s", err, file)
		}
		if !reflect.DeepEqual(again, body) {
			t.Fatalf("an accepted file changes on a marked round trip\nfile:\n%s\n got %#v\nwant %#v", file, again, body)
		}
	})
}
