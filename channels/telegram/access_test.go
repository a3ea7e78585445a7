package telegram

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/access"
)

// TestNotAllowedThroughBotAPI: with access.allowed_users naming alice, bob's messages
// and clicks through the real client library change nothing in the store and call no
// model; he is told once, his click is answered, and his updates are confirmed to
// Telegram (not offered again). A spammer over access.rate_limit is told once and dropped.
func TestNotAllowedThroughBotAPI(t *testing.T) {
	e := newEnv(t, func(e *env) {
		e.Core.Access = access.Rules{AllowedUsers: []string{"telegram:11"}, Listed: []string{"telegram"}, PerMinute: 60, Burst: 3}
	})
	sid := e.sessionID(group)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro"))
	e.api.say(group, alice, "/plan@PlanGateBot on tidy the docs")
	doc := e.waitDoc(group, `-v1\.md$`)
	s := e.waitPhase(group, core.PhaseAwaitingApproval)

	qid := e.api.click(group, bob, doc.ID, "a:"+s.ApprovalID)
	if toast := e.api.waitAnswer(qid); !strings.Contains(toast, "telegram:22") {
		t.Errorf("bob's click answered %q, want the refusal naming his id", toast)
	}
	e.Idle()
	if got := e.session(group); got.Phase != core.PhaseAwaitingApproval || got.Version != s.Version {
		t.Fatalf("after bob's click: phase %s, version %d; want the plan still pending, unchanged (version %d)", got.Phase, got.Version, s.Version)
	}
	qid = e.api.click(group, bob, doc.ID, "a:"+s.ApprovalID)
	if _, ok := waitAnswered(e, qid); !ok {
		t.Fatal("bob's second click was never answered")
	}

	calls := len(e.Model.Calls())
	for _, text := range []string{"hi", "hello?", "/plan on do it"} {
		e.api.say(private, bob, text)
	}
	e.Eventually("bob's updates confirmed to Telegram", func() bool { return e.api.queued() == 0 })
	e.Idle()
	if ms := e.api.messages(private); len(ms) != 0 {
		// bob was told in the group already: the refusal is once per person, not per chat
		t.Errorf("bob's private chat got %d replies, want none: %q", len(ms), ms[0].Text)
	}
	if _, err := e.Store.Session(context.Background(), e.sessionID(private)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("bob's private chat got a session (err %v)", err)
	}
	if n := len(e.Model.Calls()); n != calls {
		t.Errorf("%d model calls for bob's messages", n-calls)
	}
	e.Stop()
	e.Start() // a restart offers nothing again: the refused updates were confirmed
	e.Idle()
	if _, err := e.Store.Session(context.Background(), e.sessionID(private)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("after a restart bob's private chat got a session (err %v)", err)
	}

	// alice over the rate limit: three at once are taken, the rest dropped with one reply.
	for i := range 6 {
		e.api.say(group, alice, "@PlanGateBot comment "+string(rune('a'+i)))
	}
	e.api.waitText(group, "faster than my limit")
	e.Idle()
	if n := countContaining(e.api.messages(group), "faster than my limit"); n != 1 {
		t.Errorf("throttled replies: %d, want 1", n)
	}
}

// waitAnswered waits up to a few seconds for the answer to callback qid.
func waitAnswered(e *env, qid string) (string, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if a, ok := e.api.answer(qid); ok {
			return a, true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", false
}

// queued counts the updates Telegram still holds: not yet confirmed by an offset.
func (f *fakeAPI) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}
