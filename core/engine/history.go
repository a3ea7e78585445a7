package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/plangate/plangate/core"
)

// The transcript window the model sees, and the limits on what goes into it.

// trimHistory drops the oldest entries until the transcript fits the character budget;
// the newest entry always stays.
func trimHistory(h []core.ChatMessage, budget int) []core.ChatMessage {
	total := 0
	for i := len(h) - 1; i >= 0; i-- {
		total += messageSize(h[i])
		if total > budget && i < len(h)-1 {
			return h[i+1:]
		}
	}
	return h
}

func messageSize(m core.ChatMessage) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Args)
	}
	return n
}

// truncateResult cuts a tool result that is over the limit and says so, so the model
// knows it saw only part and can ask for less (read_file offset/limit).
func truncateResult(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: showing %d of %d characters; ask for a smaller part]", cut, len(s))
}

// sanitizeHistory makes a transcript window acceptable to chat APIs: it drops tool results
// whose call fell out of the window, and adds a placeholder result for a call whose result
// was never recorded (a crash mid-turn).
// A window without tool calls or results (a plain conversation) is returned as it is.
func sanitizeHistory(h []core.ChatMessage) []core.ChatMessage {
	if !slices.ContainsFunc(h, func(m core.ChatMessage) bool { return m.Role == core.RoleTool || len(m.ToolCalls) > 0 }) {
		return h
	}
	out := make([]core.ChatMessage, 0, len(h))
	open := map[string]bool{}
	var openOrder []core.ChatMessage
	closeOpen := func() {
		if len(openOrder) == 0 {
			return
		}
		for _, c := range openOrder {
			if open[c.ToolCallID] {
				out = append(out, c)
			}
		}
		clear(open)
		openOrder = nil
	}
	for _, m := range h {
		if m.Role == core.RoleTool {
			if !open[m.ToolCallID] {
				continue
			}
			delete(open, m.ToolCallID)
			out = append(out, m)
			continue
		}
		closeOpen()
		out = append(out, m)
		for _, c := range m.ToolCalls {
			open[c.ID] = true
			openOrder = append(openOrder, core.ChatMessage{Role: core.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "(no result was recorded for this call)"})
		}
	}
	closeOpen()
	return out
}

// workspace returns the workspace of a session.
func (e *Engine) workspace(s core.Session) core.Workspace {
	dir := e.cfg.WorkspaceRoot
	if e.cfg.PerSession {
		dir = filepath.Join(dir, s.Address.Dir())
	}
	return core.Workspace{SessionID: s.ID, Dir: dir}
}
