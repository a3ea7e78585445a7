package plan

import (
	"strings"
	"testing"
)

func TestReadEditedPlan(t *testing.T) {
	prev := Body{Title: "Docs", Steps: []Step{{ID: "1", Text: "Fix the typos", Status: StepPending}}, Scope: Scope{AllowedPaths: []string{"README.md"}}}
	file := string(renderBody(prev))

	edited := strings.Replace(file, "- [ ] Fix the typos\n", "- [ ] Fix the typos\n- [ ] Correct spelling mistakes\n", 1)
	b, d, refusal := ReadEdited(prev, []byte(edited))
	if refusal != "" || len(b.Steps) != 2 || d.Summary() != "Changes from v0: + Correct spelling mistakes" {
		t.Errorf("edited: %q, %+v, %q", refusal, b, d.Summary())
	}
	for _, tc := range []struct{ name, file, want string }{
		{"broken checklist", strings.Replace(file, "- [ ] Fix the typos", "- Fix the typos", 1), "I could not read the edited plan: line 7: a step must be a checklist item like `- [ ] text`. Nothing changed."},
		{"judge", strings.Replace(file, "- `README.md`", "- `/etc/passwd`", 1), "The edited plan is not valid:\nscope.allowed_paths entry \"/etc/passwd\" is absolute"},
		{"unchanged", file, "The edited plan is the same as the current one. Nothing changed."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, refusal := ReadEdited(prev, []byte(tc.file))
			if !strings.HasPrefix(refusal, tc.want) {
				t.Errorf("refusal %q, want it to start with %q", refusal, tc.want)
			}
		})
	}
}
