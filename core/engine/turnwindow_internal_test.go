package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// The history budget holds inside a turn too: tool results that pile up across the
// rounds of one long turn push the oldest entries out, and every tool call the model
// still sees keeps its result.
func TestTurnWindowKeepsTheBudgetInsideATurn(t *testing.T) {
	const budget = 10_000
	tr := &turn{history: []core.ChatMessage{{Role: core.RoleUser, Content: "an old question " + strings.Repeat("x", 3000)},
		{Role: core.RoleAssistant, Content: "an old answer"}}}
	tr.add(core.ChatMessage{Role: core.RoleUser, Content: "read every file"})
	for i := range 8 {
		id := fmt.Sprintf("call_%d", i)
		tr.add(core.ChatMessage{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: id, Name: "read_file", Args: json.RawMessage(`{"path":"f"}`)}}})
		tr.add(core.ChatMessage{Role: core.RoleTool, ToolCallID: id, Name: "read_file", Content: strings.Repeat("y", 2500)})
	}
	got := turnWindow(tr, budget)
	total := 0
	for _, m := range got {
		total += messageSize(m)
	}
	if total > budget {
		t.Errorf("the window holds %d characters, over the budget of %d", total, budget)
	}
	if last := got[len(got)-1]; last.Role != core.RoleTool || last.ToolCallID != "call_7" {
		t.Errorf("the newest entry is missing: %+v", last)
	}
	calls := map[string]bool{}
	for _, m := range got {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == core.RoleTool && !calls[m.ToolCallID] {
			t.Errorf("a tool result without its call: %s", m.ToolCallID)
		}
		if strings.HasPrefix(m.Content, "an old question") {
			t.Error("the oldest history entry should have gone first")
		}
	}
	// Within the budget nothing is dropped.
	small := &turn{history: tr.history[1:]}
	small.add(core.ChatMessage{Role: core.RoleUser, Content: "hi"})
	if got := turnWindow(small, budget); len(got) != 2 {
		t.Errorf("a small window changed: %+v", got)
	}
}
