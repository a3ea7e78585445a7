package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

func roles(ms []core.ChatMessage) (out []core.Role) {
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

// A plain message from an adapter that replays unfinished events is one commit with the
// turn's answer when the agent calls no tool: the event's key, the person's entry, the
// answer and its outbox row. A turn that calls a tool stores the message first, on its
// own; a model failure stores it with the notice; and where another process holds the
// session's lease the message is stored for it at once.
func TestPlainMessageIsOneCommit(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	cl := &commitLog{Store: h.st}
	model := newFakeModel()
	out := &recorder{}
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: cl, Model: model, Out: out, Now: func() time.Time { return h.clock }, Owner: "p1"}))
	chat, sid := "one", sessionID("one")
	n := 0
	say := func(id, text string) []core.Change {
		t.Helper()
		n = cl.count()
		m := core.Message{ID: id, Address: addr(chat), Sender: core.Person{ID: "local", Name: "local"}, Text: text, Time: h.clock, Replays: true}
		if err := eng.Handle(ctx, m); err != nil {
			t.Fatalf("handling %q: %v", text, err)
		}
		return cl.since(n)
	}
	stored := func() []core.ChatMessage {
		t.Helper()
		tr, err := h.st.Transcript(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}

	for i, id := range []string{"e1", "e2"} { // the first creates the session
		model.push(sid, text("answer"))
		chs := say(id, "hello")
		if len(chs) != 1 {
			t.Fatalf("message %d: %d commits, want 1: %+v", i, len(chs), chs)
		}
		ch := chs[0]
		if ch.Inbound == nil || ch.Inbound.EventID != id || ch.Session == nil || len(ch.Outbox) != 1 ||
			len(ch.Messages) != 2 || ch.Messages[0].Role != core.RoleUser || ch.Messages[1].Content != "answer" {
			t.Fatalf("message %d: the commit is %+v, want the key, the session, user and answer entries and one outbox row", i, ch)
		}
	}
	if got := out.count(); got != 2 || lastText(out.all()) != "answer" {
		t.Fatalf("replies %+v, want the two answers", out.all())
	}
	if seen, err := h.st.SeenInbound(ctx, core.InboundKey{Channel: "terminal", Account: "local", EventID: "e2"}); err != nil || !seen {
		t.Fatalf("the event's key is not stored: %v %v", seen, err)
	}

	// A tool call: the message is stored before the tool round.
	model.push(sid, calls(call("no_such_tool", map[string]any{})), text("done"))
	chs := say("e3", "use a tool")
	if len(chs) < 2 || chs[0].Inbound == nil || len(chs[0].Messages) != 1 || chs[0].Messages[0].Content != "use a tool" {
		t.Fatalf("the first commit of a tool turn is %+v, want the message alone", chs)
	}

	// A failed model call: the message is stored with the notice.
	model.push(sid, step{err: errors.New("provider down")})
	chs = say("e4", "are you there")
	if tr := stored(); tr[len(tr)-1].Content != "are you there" {
		t.Fatalf("the message is not stored after a failed model call: %+v", roles(tr))
	}
	if len(chs) != 1 || chs[0].Inbound == nil || len(chs[0].Outbox) != 1 {
		t.Errorf("a failed model call: commits %+v, want the message with the notice's row", chs)
	}

	// Another process holds the lease: the message is queued for its turn, outside the
	// transcript until that turn takes it.
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sid), "someone-else", h.clock, time.Hour); err != nil || !ok {
		t.Fatalf("taking the lease: %v %v", ok, err)
	}
	before, entries := model.Calls(), len(stored())
	say("e5", "for the holder")
	if q := h.session(chat).Injections; len(q) != 1 || q[0] != (core.Injection{Kind: core.InjectMessage, Text: "for the holder", Name: "local"}) {
		t.Fatalf("the message is not queued for the lease holder: %+v", q)
	}
	if tr := stored(); len(tr) != entries {
		t.Fatalf("the message entered the transcript without the lease: %+v", roles(tr))
	}
	if len(model.Calls()) != len(before) {
		t.Error("a turn ran without the lease")
	}
}

// As TestMessageLeftJustBeforeReleaseIsAnswered, for a message held back for its turn's
// commit: the holder looks for work another process left after releasing the lease.
func TestDeferredMessageLeftJustBeforeReleaseIsAnswered(t *testing.T) {
	h := newHarness(t)
	leftJustBeforeRelease(t, h, true)
	tr, err := h.st.Transcript(context.Background(), sessionID("a"), 0)
	if err != nil || len(tr) != 4 || tr[0].Content != "hello" {
		t.Fatalf("transcript %+v (%v), want hello, its answer, B's message and its answer", roles(tr), err)
	}
}
