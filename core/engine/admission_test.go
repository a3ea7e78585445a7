package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/access"
	"github.com/plangate/plangate/core/engine"
)

// accessHarness is a harness whose engine enforces rules and reports to an observer.
func accessHarness(t *testing.T, rules access.Rules) (*harness, *countingObserver) {
	t.Helper()
	h := newHarness(t, func(c *engine.Config) { c.Access = rules })
	obs := &countingObserver{counts: map[string]int{}}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Out: h.out,
		Now: func() time.Time { return h.clock }, Observer: obs}))
	return h, obs
}

var tgChat = core.Address{Channel: "telegram", Account: "bot1", Chat: "555"}

var eventSeq int

// tg sends a Telegram message from sender and waits for it to be handled, returning the
// replies it produced.
func (h *harness) tg(sender core.Person, text string, action *core.Action) []core.Reply {
	h.t.Helper()
	eventSeq++
	n := h.out.count()
	m := core.Message{ID: fmt.Sprintf("u%d", eventSeq), Address: tgChat, Sender: sender, Text: text, Action: action, Direct: true, Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		h.t.Fatalf("handling %q: %v", text, err)
	}
	return h.out.since(n)
}

// storedNothing fails unless the store holds nothing of tgChat's session: no session row,
// no transcript, no event, no inbound key of the last message.
func (h *harness) storedNothing(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.st.Session(ctx, tgChat.SessionID()); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("session of a refused sender: err = %v, want not found", err)
	}
	msgs, err := h.st.Transcript(ctx, tgChat.SessionID(), 100)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("transcript of a refused sender: %d messages, err %v", len(msgs), err)
	}
	seen, err := h.st.SeenInbound(ctx, core.InboundKey{Channel: "telegram", Account: "bot1", EventID: fmt.Sprintf("u%d", eventSeq)})
	if err != nil || seen {
		t.Fatalf("refused event recorded: seen %v, err %v", seen, err)
	}
	if n := len(h.model.requests()); n != 0 {
		t.Fatalf("%d model calls for refused messages", n)
	}
}

// TestNotAllowedChangesNothing: a person not in allowed_users is told once, however much
// they write, and nothing of them reaches the store or the model; a listed person in the
// same chat is answered.
func TestNotAllowedChangesNothing(t *testing.T) {
	h, obs := accessHarness(t, access.Rules{AllowedUsers: []string{"telegram:1"}, Listed: []string{"telegram"}})
	mallory := core.Person{ID: "666", Name: "mallory"}
	first := h.tg(mallory, "hello", nil)
	if len(first) != 1 {
		t.Fatalf("first refused message: %d replies, want 1", len(first))
	}
	r := first[0]
	mustContain(t, r.Text, "telegram:666", "access.allowed_users")
	if r.To != tgChat || r.InReplyTo != fmt.Sprintf("u%d", eventSeq) || r.Kind != core.ReplyNotice {
		t.Fatalf("refusal reply = %+v, want a notice to the chat answering the event", r)
	}
	for _, text := range []string{"hello?", "/plan on", "/plan accept", "/plan status", "/plan nope"} {
		if rs := h.tg(mallory, text, nil); len(rs) != 0 {
			t.Fatalf("%q from a refused sender: replies %q, want none (told once)", text, joinTexts(rs))
		}
	}
	if rs := h.tg(mallory, "", &core.Action{Kind: core.ActionAccept, ApprovalID: "x"}); len(rs) != 0 {
		t.Fatalf("click of a refused sender answered: %q", joinTexts(rs))
	}
	h.storedNothing(t)
	unsent, err := h.st.UnsentOutbox(context.Background(), nil, 10)
	if err != nil || len(unsent) != 0 {
		t.Fatalf("outbox rows for refusals: %d, err %v", len(unsent), err)
	}
	h.clock = h.clock.Add(access.RefusalEvery)
	if rs := h.tg(mallory, "still me", nil); len(rs) != 1 {
		t.Fatalf("after the window: %d replies, want the refusal again", len(rs))
	}
	h.storedNothing(t)

	if rs := h.tg(core.Person{ID: "1", Name: "alice"}, "hi", nil); lastText(rs) != "ok" {
		t.Fatalf("listed sender: replies %q, want the model's answer", joinTexts(rs))
	}
	msgs, err := h.st.Transcript(context.Background(), tgChat.SessionID(), 100)
	if err != nil || len(msgs) != 2 || msgs[0].Content != "hi" {
		t.Fatalf("transcript after the listed sender: %+v, err %v; want only alice's message and its answer", msgs, err)
	}
	if c, _ := obs.snapshot(); c["access telegram not_allowed"] != 8 || c["inbound telegram handled"] != 1 {
		t.Fatalf("observer counts %v, want 8 not_allowed refusals and 1 handled", c)
	}
}

// TestThrottledDropsWithoutModelCall: over the rate, messages are dropped with one reply
// per stretch and no model call; an approver's /plan off and the admin API go through.
func TestThrottledDropsWithoutModelCall(t *testing.T) {
	h, obs := accessHarness(t, access.Rules{PerMinute: 2, Burst: 2, Approvers: []string{"telegram:7"}})
	bob := core.Person{ID: "5", Name: "bob"}
	for i := range 2 {
		if rs := h.tg(bob, fmt.Sprintf("question %d", i), nil); lastText(rs) != "ok" {
			t.Fatalf("message %d within the burst: %q", i, joinTexts(rs))
		}
	}
	rs := h.tg(bob, "question 2", nil)
	if len(rs) != 1 {
		t.Fatalf("first throttled message: %d replies, want 1", len(rs))
	}
	mustContain(t, rs[0].Text, "2 messages a minute", "30 seconds")
	for i := 3; i < 10; i++ {
		h.clock = h.clock.Add(time.Second)
		if rs := h.tg(bob, fmt.Sprintf("question %d", i), nil); len(rs) != 0 {
			t.Fatalf("question %d in the same stretch answered: %q", i, joinTexts(rs))
		}
	}
	if n := len(h.model.requests()); n != 2 {
		t.Fatalf("%d model calls, want 2 (the throttled messages dropped)", n)
	}
	msgs, err := h.st.Transcript(context.Background(), tgChat.SessionID(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Role == core.RoleUser && m.Content != "question 0" && m.Content != "question 1" {
			t.Fatalf("a throttled message is in the transcript: %q", m.Content)
		}
	}

	alice := core.Person{ID: "7", Name: "alice"}
	for i := range 5 { // alice talks over her own limit...
		h.tg(alice, fmt.Sprintf("alice %d", i), nil)
	}
	// ...and can still stop the session: decisions of approvers are not limited.
	h.tg(alice, "/plan on", nil)
	if s, err := h.st.Session(context.Background(), tgChat.SessionID()); err != nil || s.Phase != core.PhasePlanning {
		t.Fatalf("approver's /plan on over the limit: phase %s, err %v; want planning", s.Phase, err)
	}
	h.tg(alice, "/plan off", nil)
	if s, _ := h.st.Session(context.Background(), tgChat.SessionID()); s.Phase != core.PhaseOff {
		t.Fatalf("approver's /plan off over the limit: phase %s, want off", s.Phase)
	}
	admin := core.Person{ID: "admin:ops", Name: "ops", Admin: true}
	before := len(h.model.requests())
	for i := range 4 {
		h.tg(admin, fmt.Sprintf("admin %d", i), nil)
	}
	if n := len(h.model.requests()) - before; n != 4 {
		t.Fatalf("admin API messages: %d model calls, want 4 (never limited)", n)
	}
	c, _ := obs.snapshot()
	if c["access telegram throttled"] != 8+3 {
		t.Fatalf("observer counts %v, want 11 throttled (bob's 8, alice's 3)", c)
	}
}
