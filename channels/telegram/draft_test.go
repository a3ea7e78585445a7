package telegram

import (
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// TestDraftEditsAtMostOncePerSecond: an answer streamed in eight pieces 300 ms apart (by
// the engine's clock) is one sendMessage (the draft), one throttled editMessageText a
// second or more after it, and the final editMessageText with the whole answer.
func TestDraftEditsAtMostOncePerSecond(t *testing.T) {
	e := newEnv(t, func(e *env) {
		e.StreamIn(8, 300*time.Millisecond)
	})
	answer := "one two three four five six seven eight."
	e.Model.Push(e.sessionID(private), core.ModelResponse{Text: answer})
	e.api.say(private, alice, "count for me")
	e.api.waitFor("the final edit", func() bool { return len(e.api.callsL("editMessageText")) >= 2 })
	e.Idle()
	sends, edits := e.api.callsOf("sendMessage"), e.api.callsOf("editMessageText")
	if len(sends) != 1 || sends[0].Params["text"] != "one" {
		t.Fatalf("sendMessage calls %+v, want the draft \"one\" only", sends)
	}
	// Pieces at 0.3 s (the post) … 2.4 s: the next change allowed is at 1.5 s ("one two
	// three four five"), then none before the answer.
	want := []string{"one two three four five", answer}
	var got []string
	for _, c := range edits {
		got = append(got, c.Params["text"])
		if c.Params["message_id"] != "" && sends[0].Params["chat_id"] != c.Params["chat_id"] {
			t.Errorf("edit in chat %s, draft in %s", c.Params["chat_id"], sends[0].Params["chat_id"])
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("editMessageText texts %q, want %q", got, want)
	}
}
