package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// made is what the store holds of user's conversations made with New conversation.
func (e *env) madeIDs(user string) []string {
	e.t.Helper()
	v, _, err := e.st.ChannelState(context.Background(), Name, user, conversationsKey)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Fields(v)
}

// inMemory reports whether the channel holds conversation id of user in memory.
func (e *env) inMemory(user, id string) bool {
	e.web.mu.Lock()
	defer e.web.mu.Unlock()
	_, ok := e.web.convos[address(user, id).SessionID()]
	return ok
}

// A page, a stream or a post for a conversation nobody made is 404 and stores nothing,
// in the store or in memory; New conversation makes one that every page then knows.
func TestUnknownConversationIs404(t *testing.T) {
	e := newEnv(t)
	alice := e.signIn("alice")
	for _, path := range []string{"/c/nosuch1", "/c/nosuch2/events"} {
		code, page := alice.status(path)
		if code != http.StatusNotFound || !strings.Contains(page, "New conversation") {
			t.Fatalf("GET %s: %d %q, want 404 saying how to start one", path, code, page)
		}
	}
	res := alice.post("/c/nosuch3/messages", url.Values{"text": {"hello"}})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("posting into a conversation nobody made: %d %s", res.StatusCode, body(res))
	}
	res = alice.post("/c/nosuch4/actions", url.Values{"kind": {"answer"}, "approval": {"q1"}, "value": {"x"}})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("a button in a conversation nobody made: %d %s", res.StatusCode, body(res))
	}
	for _, id := range []string{"nosuch1", "nosuch2", "nosuch3", "nosuch4"} {
		if e.inMemory("alice", id) {
			t.Fatalf("%s is held in memory", id)
		}
		if _, err := e.st.Session(context.Background(), address("alice", id).SessionID()); err == nil {
			t.Fatalf("%s has a session in the store", id)
		}
	}
	if ids := e.madeIDs("alice"); len(ids) != 0 {
		t.Fatalf("conversations stored: %q", ids)
	}
	if page := alice.get("/"); strings.Contains(page, "nosuch") {
		t.Fatalf("the side list shows a conversation nobody made: %s", page)
	}

	// New conversation makes one: stored before the page, known to every page after.
	res = alice.post("/conversations", url.Values{})
	id := strings.TrimPrefix(res.Header.Get("Location"), "/c/")
	if res.StatusCode != http.StatusSeeOther || id == "" {
		t.Fatalf("New conversation: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if ids := e.madeIDs("alice"); len(ids) != 1 || ids[0] != id {
		t.Fatalf("stored conversations %q, want [%s]", ids, id)
	}
	if page := alice.get("/c/" + id); !strings.Contains(page, `<h1 class="convo-title">New conversation</h1>`) || strings.Contains(page, ">Conversation "+id) {
		t.Fatalf("the new conversation's page: %s", page)
	}
	// bob cannot open alice's conversation by its id: his own of that id does not exist.
	if code, _ := e.signIn("bob").status("/c/" + id); code != http.StatusNotFound {
		t.Fatalf("bob opening alice's conversation id: %d, want 404", code)
	}
}

// A user has at most max_conversations: the next click is refused, says so, and stores
// nothing; conversations with a session count as well. A restart keeps the count.
func TestConversationCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := configured(t, st, Config{Enabled: true, Users: testUsers, MaxConversations: 3}, Deps{})
	alice := e.signIn("alice")
	// One conversation has a session already (made earlier and written to).
	sess := core.Session{ID: address("alice", "old").SessionID(), Address: address("alice", "old"), Phase: core.PhaseOff, Owner: "alice"}
	if _, err := st.Commit(context.Background(), core.Change{Session: &sess}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if res := alice.post("/conversations", url.Values{}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("New conversation %d: %d %s", i+1, res.StatusCode, body(res))
		}
	}
	res := alice.post("/conversations", url.Values{})
	if res.StatusCode != http.StatusConflict || !strings.Contains(body(res), "max_conversations") {
		t.Fatalf("one over the cap: %d %s, want 409 naming max_conversations", res.StatusCode, body(res))
	}
	if ids := e.madeIDs("alice"); len(ids) != 2 {
		t.Fatalf("stored conversations %q, want the 2 made under the cap", ids)
	}
	again := configured(t, st, Config{Enabled: true, Users: testUsers, MaxConversations: 3}, Deps{})
	if res := again.signIn("alice").post("/conversations", url.Values{}); res.StatusCode != http.StatusConflict {
		t.Fatalf("after a restart: %d, want the cap still reached", res.StatusCode)
	}
	if res := again.signIn("bob").post("/conversations", url.Values{}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("bob's first conversation: %d; the cap is per user", res.StatusCode)
	}
}

// A message (or a button's value) over max_message_bytes is refused with the sizes and
// nothing of it is shown, handed on or stored; the default is 32 KB.
func TestMessageSizeCap(t *testing.T) {
	e := newEnv(t)
	alice := e.signIn("alice")
	e.makeConversation("alice", "big")
	huge := strings.Repeat("x", DefaultMaxMessageBytes+1)
	res := alice.post("/c/big/messages", url.Values{"text": {huge}})
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body(res), "max_message_bytes") {
		t.Fatalf("a message over the cap: %d %s, want 413 naming max_message_bytes", res.StatusCode, body(res))
	}
	res = alice.post("/c/big/actions", url.Values{"kind": {"revise"}, "approval": {"a1"}, "value": {huge}})
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("feedback over the cap: %d %s, want 413", res.StatusCode, body(res))
	}
	if shown := e.web.shown(address("alice", "big")); len(shown) != 0 {
		t.Fatalf("the page shows %d items of refused posts", len(shown))
	}
	if _, err := e.st.Session(context.Background(), address("alice", "big").SessionID()); err == nil {
		t.Fatal("a refused message made a session in the store")
	}
	e.model.Push(address("alice", "big").SessionID(), core.ModelResponse{Text: "Got it."})
	alice.say("big", strings.Repeat("y", DefaultMaxMessageBytes))
	waitFor(t, "the message at the cap to be stored", func() bool {
		tr, _ := e.st.Transcript(context.Background(), address("alice", "big").SessionID(), 10)
		for _, m := range tr {
			if m.Role == core.RoleUser && len(m.Content) == DefaultMaxMessageBytes {
				return true
			}
		}
		return false
	})
}

// A user holds at most max_streams live pages on a replica; one more gets an event that
// says why and the stream ends, and a page closed frees its place.
func TestStreamCap(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := configured(t, st, Config{Enabled: true, Users: testUsers, MaxStreams: 2}, Deps{})
	e.runIdle(t)
	alice := e.signIn("alice")
	e.makeConversation("alice", "live")
	first, _ := alice.openStream(t, "live", e.web.eventID(0), "")
	second, _ := alice.openStream(t, "live", e.web.eventID(0), "")
	defer second.Body.Close()
	over, r := alice.openStream(t, "live", e.web.eventID(0), "")
	if ev := readEvent(t, r); ev.name != "limit" || !strings.Contains(ev.data, "max_streams") {
		t.Fatalf("a third live page: %+v, want the limit event naming max_streams", ev)
	}
	if _, err := r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("the stream over the cap stays open: %v", err)
	}
	over.Body.Close()
	bob := e.signIn("bob")
	e.makeConversation("bob", "live")
	b, _ := bob.openStream(t, "live", e.web.eventID(0), "")
	b.Body.Close()
	first.Body.Close()
	waitFor(t, "the closed page to free its place", func() bool {
		e.web.mu.Lock()
		defer e.web.mu.Unlock()
		return e.web.streams["alice"] == 1
	})
	third, _ := alice.openStream(t, "live", e.web.eventID(0), "")
	third.Body.Close()
}
