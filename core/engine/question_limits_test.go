package engine_test

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// A question goes to people as the model wrote it, so the judge's limits hold for it:
// too long, or carrying control or invisible characters, it is refused to the agent and
// nothing changes.
func TestAskUserQuestionLimits(t *testing.T) {
	for name, a := range map[string]map[string]any{
		"long question":   {"question": strings.Repeat("why ", 600), "options": []string{"A", "B"}},
		"escape sequence": {"question": "Which?\x1b]52;c;eA==\x07", "options": []string{"A", "B"}},
		"zero-width":      {"question": "Which?", "options": []string{"A\u200b", "B"}},
		"newline option":  {"question": "Which?", "options": []string{"A\nB", "C"}},
	} {
		t.Run(name, func(t *testing.T) {
			s, cur := fixture(core.PhasePlanning, machine.TrigAsk)
			in := input(machine.TrigAsk)
			in.Args = args(a)
			o, err := machine.Apply(s, cur, machine.TrigAsk, in)
			if err != nil {
				t.Fatal(err)
			}
			if o.Refusal == nil {
				t.Fatalf("the question was accepted: %+v", o.Session.Question)
			}
			if !strings.Contains(o.Refusal.Text, "ask_user_question") || len(o.Change.Events) != 0 || o.Session.Question != nil {
				t.Errorf("refusal %q changed something: %+v", o.Refusal.Text, o.Change)
			}
		})
	}
}
