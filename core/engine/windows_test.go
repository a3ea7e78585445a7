package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// transcriptCounter counts the transcript reads of the engine it serves.
type transcriptCounter struct {
	*store.Store
	reads atomic.Int64
}

func (c *transcriptCounter) Transcript(ctx context.Context, id string, limit int) ([]core.ChatMessage, error) {
	c.reads.Add(1)
	return c.Store.Transcript(ctx, id, limit)
}

// The transcript window an engine keeps in memory is what the store returns for the
// session's current row version (its newest entries: over HistoryMessages the kept window
// is cut to three quarters of it, so it may be shorter), through plain turns, tool calls (arguments with spaces:
// the store compacts them), windows longer than HistoryMessages, a conflict with another
// process's commit and a restart, with messages committed on their own and with their
// turn; and plain messages then read no transcript at all.
func TestKeptWindowIsTheStoredWindow(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.HistoryMessages = 7 })
	ctx := context.Background()
	chat, sid := "w", sessionID("w")
	cs := &transcriptCounter{Store: h.st}
	model := newFakeModel()
	var seq atomic.Int64
	newEngine := func(st *transcriptCounter, owner string) *engine.Engine {
		return h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: model, Out: h.out, Owner: owner,
			Now: func() time.Time {
				return day.Add(time.Duration(seq.Add(1)) * time.Millisecond).In(time.FixedZone("X", 3600))
			}}))
	}
	a := newEngine(cs, "a")
	say := func(eng *engine.Engine, text string) {
		t.Helper()
		// Every other message held back for its turn's first commit (deferred.go).
		m := core.Message{ID: fmt.Sprintf("ev-%d", seq.Add(1)), Address: addr(chat), Sender: core.Person{ID: "local", Name: "local"},
			Text: text, Time: h.clock, Replays: seq.Load()%2 == 0}
		if err := eng.Handle(ctx, m); err != nil {
			t.Fatalf("handling %q: %v", text, err)
		}
	}
	// check compares the window a keeps (if any) with the store's; kept says whether one
	// must be kept.
	check := func(what string, eng *engine.Engine, mustKeep bool) {
		t.Helper()
		s, err := h.st.Session(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		want, err := h.st.Transcript(ctx, sid, h.cfg.HistoryMessages)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := engine.WindowOf(eng, sid, s.Version)
		if mustKeep && !ok {
			t.Fatalf("%s: no window kept for version %d", what, s.Version)
		}
		least := min(len(want), h.cfg.HistoryMessages-h.cfg.HistoryMessages/4)
		if ok && (len(got) < least || len(got) > len(want) || !reflect.DeepEqual(got, want[len(want)-len(got):])) {
			t.Fatalf("%s: the kept window is not the newest %d or more of the store's\n got %+v\nwant %+v", what, least, got, want)
		}
	}
	toolCall := func(i int) core.ToolCall {
		return core.ToolCall{ID: fmt.Sprintf("w_%d", i), Name: "no_such_tool", Args: json.RawMessage(fmt.Sprintf(`{ "n" : %d }`, i))}
	}

	say(a, "first")
	check("after the first message", a, true)
	for i := range 8 {
		if i%3 == 1 {
			model.push(sid, calls(toolCall(i), toolCall(100+i)), text(fmt.Sprintf("done %d", i)))
		}
		say(a, fmt.Sprintf("message %d", i))
		check(fmt.Sprintf("after message %d", i), a, true)
	}
	reads := cs.reads.Load()
	say(a, "one more")
	check("after one more", a, true)
	if n := cs.reads.Load() - reads; n != 0 {
		t.Errorf("a plain message read the transcript %d times, want 0 (the window is kept)", n)
	}

	// Another process commits a message while a's turn runs: a's flush conflicts and is
	// rebased, a picks the message up in a second turn, and its window follows the store.
	b := newEngine(&transcriptCounter{Store: h.st}, "b")
	var once sync.Once
	model.Hook(func(core.ModelRequest) {
		once.Do(func() { say(b, "from b while a works") })
	})
	say(a, "a long one")
	model.Hook(func(core.ModelRequest) {})
	check("after the conflict", a, false)
	say(a, "after the conflict")
	check("after the message after the conflict", a, true)

	// b's own window of the session is behind now: it reads the store again.
	say(b, "b again")
	check("b after its message", b, true)
	check("a after b's message", a, false)
	say(a, "a again")
	check("a after its message", a, true)

	// A restart keeps nothing in memory; the first turn reads the store.
	a = newEngine(cs, "a2")
	check("after the restart", a, false)
	reads = cs.reads.Load()
	say(a, "after the restart")
	if cs.reads.Load() == reads {
		t.Error("the first turn after a restart did not read the transcript")
	}
	check("after the first message after the restart", a, true)
}
