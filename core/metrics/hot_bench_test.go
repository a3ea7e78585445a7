package metrics

import (
	"testing"
	"time"
)

// BenchmarkHotPath is what one message costs the metrics at most: a commit, a model
// call, an inbound event, a reply and a tool call.
func BenchmarkHotPath(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.StoreCommit(true, time.Millisecond)
		m.ModelRequest("ok", time.Millisecond)
		m.Inbound("telegram", "handled")
		m.Reply("telegram", "sent")
		m.ToolCall("edit_file", "ran")
	}
}
