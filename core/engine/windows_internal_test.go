package engine

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// A kept window is handed out without a copy: what a turn got stays as it was while
// later commits move the window along (appending past its end, cutting its front), and
// an append to what get returned does not write into the kept window. Over its limit
// the window is cut to three quarters of it, so its start stays put for the next
// quarter's entries (the prompt cache's prefix).
func TestKeptWindowSharedWithoutACopy(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entry := func(i int) core.ChatMessage {
		return core.ChatMessage{Role: core.RoleUser, Content: fmt.Sprintf("m%d", i), At: now.Add(time.Duration(i) * time.Second)}
	}
	const limit = 8
	var c windowCache
	var first []core.ChatMessage
	for i := range limit {
		first = append(first, entry(i))
	}
	c.put("s", 1, first, now)

	got, ok := c.get("s", 1, now)
	if !ok || !reflect.DeepEqual(got, first) {
		t.Fatalf("get = %v, %v; want the window put", got, ok)
	}
	held := slices.Clone(got)
	// The turn appends its held-back message to what it got.
	if mine := append(got, core.ChatMessage{Role: core.RoleUser, Content: "the turn's own", At: now}); len(mine) != limit+1 {
		t.Fatalf("append gave %d entries", len(mine))
	}
	if again, _ := c.get("s", 1, now); !reflect.DeepEqual(again, first) {
		t.Errorf("an append to what get returned changed the window: %v", again)
	}
	// Ten commits of two entries each move the window along: every other one goes over
	// the limit (8) and cuts the window to its newest 6; the one after keeps its start.
	v := int64(1)
	for i := limit; i < limit+20; i += 2 {
		from := i - 4 // cut to the newest 6
		if (i-limit)/2%2 == 1 {
			from = i - 6 // 8 entries: the start of the cut before stays
		}
		c.committed("s", v, v+1, []core.ChatMessage{entry(i), entry(i + 1)}, limit, now)
		v++
		if !reflect.DeepEqual(got, held) {
			t.Fatalf("after the commit to version %d the window a turn got changed: %v, was %v", v, got, held)
		}
		w, ok := c.get("s", v, now)
		if !ok {
			t.Fatalf("no window at version %d", v)
		}
		var want []core.ChatMessage
		for j := from; j <= i+1; j++ {
			want = append(want, entry(j))
		}
		if !reflect.DeepEqual(w, want) {
			t.Fatalf("window at version %d = %v, want %v", v, w, want)
		}
		if cap(w) != len(w) {
			t.Errorf("get at version %d returned spare capacity %d", v, cap(w)-len(w))
		}
		got, held = w, slices.Clone(w)
	}
}

// A window without tool entries is the model's window as it is (no copy); one with a
// tool call still gets its missing result and loses an orphaned result.
func TestSanitizeHistoryPlainWindowUnchanged(t *testing.T) {
	plain := []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}, {Role: core.RoleAssistant, Content: "hello"}}
	if got := sanitizeHistory(plain); len(got) != 2 || &got[0] != &plain[0] {
		t.Errorf("a plain window was copied or changed: %v", got)
	}
	tools := []core.ChatMessage{
		{Role: core.RoleTool, ToolCallID: "gone", Content: "orphan"},
		{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "a", Name: "read_file"}}},
		{Role: core.RoleUser, Content: "next"},
		{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "b", Name: "read_file"}}},
		{Role: core.RoleTool, ToolCallID: "b", Content: "ok"},
	}
	got := sanitizeHistory(tools)
	var shape []string
	for _, m := range got {
		shape = append(shape, string(m.Role)+":"+m.ToolCallID)
	}
	want := []string{"assistant:", "tool:a", "user:", "assistant:", "tool:b"}
	if !slices.Equal(shape, want) {
		t.Errorf("sanitized = %v, want %v", shape, want)
	}
}
