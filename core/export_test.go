package core

// WindowOf is the transcript window engine e keeps for session id at row version, if any
// (see windows.go).
func WindowOf(e *Engine, id string, version int64) ([]ChatMessage, bool) {
	return e.windows.get(id, version, e.d.Now())
}
