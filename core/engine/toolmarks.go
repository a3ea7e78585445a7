package engine

import (
	"sync"

	"github.com/plangate/plangate/core"
)

// toolMarks remembers which MCP tools are destructive (destructiveHint), for the mark in
// plan files. A plan file may be rewritten while the tool's server is down and its tools
// are withdrawn: the mark must not vanish then, so what a listing once said is kept until
// a later listing says otherwise.
type toolMarks struct {
	tools core.Toolbox // nil: no tools, no marks

	mu    sync.Mutex
	known map[string]bool // tool name -> destructive
}

// isDestructive reports whether tool is marked destructive, listing the tools now.
func (m *toolMarks) isDestructive(tool string) bool {
	if d := m.destructive(); d != nil {
		return d(tool)
	}
	return false
}

// destructive lists the tools now and returns the marks to render with (nil: none).
func (m *toolMarks) destructive() func(string) bool {
	if m == nil || m.tools == nil {
		return nil
	}
	specs := m.tools.Tools()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range specs {
		if !IsMCPTool(s.Name) {
			continue
		}
		if m.known == nil {
			m.known = map[string]bool{}
		}
		m.known[s.Name] = s.Destructive
	}
	snap := make(map[string]bool, len(m.known))
	for k, v := range m.known {
		if v {
			snap[k] = true
		}
	}
	return func(tool string) bool { return snap[tool] }
}
