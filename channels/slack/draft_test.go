package slack

import (
	"strings"
	"testing"
	"time"
)

// TestDraftEditsAtMostOncePerSecond: an answer streamed in eight pieces 300 ms apart (by
// the engine's clock) is one chat.postMessage (the draft) in the DM's thread, one
// throttled chat.update a second or more after it, and the final chat.update with the
// whole answer on the same message.
func TestDraftEditsAtMostOncePerSecond(t *testing.T) {
	e := newEnv(t, func(e *env) {
		e.StreamIn(8, 300*time.Millisecond)
		e.Model.Echo("") // the answer is the DM's text, whichever thread it starts
	})
	answer := "one two three four five six seven eight."
	first := e.api.dm(dmAlice, alice, answer, "")
	e.api.waitText(dmAlice, answer)
	e.Idle()
	posts, updates := e.api.callsOf("chat.postMessage"), e.api.callsOf("chat.update")
	if len(posts) != 1 || posts[0].Form["text"] != "one" || posts[0].Form["thread_ts"] != first.TS {
		t.Fatalf("chat.postMessage calls %+v, want the draft \"one\" in the DM's thread only", posts)
	}
	want := []string{"one two three four five", answer}
	var got []string
	for _, c := range updates {
		got = append(got, c.Form["text"])
		if c.Form["ts"] == "" || c.Form["channel"] != dmAlice {
			t.Errorf("chat.update %+v: not an edit of the draft in %s", c.Form, dmAlice)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("chat.update texts %q, want %q", got, want)
	}
	if ms := e.api.messages(dmAlice); len(ms) != 1 || ms[0].Text != answer {
		t.Errorf("the DM shows %+v, want the answer once", ms)
	}
}
