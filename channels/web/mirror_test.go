package web

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// sentLog is the outbox as the follower sees it: rows marked sent, by any replica.
type sentLog struct {
	mu    sync.Mutex
	rows  []core.Outgoing
	polls int
}

func (s *sentLog) SentSince(context.Context, string, time.Time, int) ([]core.Outgoing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls++
	return slices.Clone(s.rows), nil
}

func (s *sentLog) add(id int64, r core.Reply) {
	s.mu.Lock()
	s.rows = append(s.rows, core.Outgoing{ID: id, SessionID: r.To.SessionID(), Reply: r})
	s.mu.Unlock()
}

// waitPolls returns once the follower has read the log n more times.
func (s *sentLog) waitPolls(t *testing.T, n int) {
	t.Helper()
	s.mu.Lock()
	want := s.polls + n
	s.mu.Unlock()
	waitFor(t, "the follower to poll", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.polls >= want })
}

// A page open on this replica shows the replies another replica sent (read from the
// outbox), once, including a row that became visible after a later one; replies this
// replica sent itself are not shown twice; what was sent before the follower started is
// not replayed onto the page.
func TestMirrorShowsOtherReplicasReplies(t *testing.T) {
	e := bareEnv(t)
	log := &sentLog{}
	a := address("alice", "live")
	log.add(1, core.Reply{To: a, Text: "sent before this replica started"})
	e.web.mirror = newMirror(log, time.Now)
	e.web.mirror.every = 5 * time.Millisecond
	e.runIdle(t)
	alice := e.signIn("alice")
	e.makeConversation("alice", "live")
	res, r := alice.openStream(t, "live", e.web.eventID(0), "")
	defer res.Body.Close()
	log.waitPolls(t, 2)

	local := core.Reply{To: a, Text: "sent here", InReplyTo: "m1"}
	if _, err := e.web.Send(t.Context(), local); err != nil {
		t.Fatal(err)
	}
	log.add(3, local) // this replica marks it sent
	log.add(4, core.Reply{To: a, Text: "sent by replica B", InReplyTo: "m2"})
	log.add(2, core.Reply{To: a, Text: "committed earlier, visible later", InReplyTo: "m0"})
	log.add(5, core.Reply{To: address("bob", "live"), Text: "nobody has bob's page open here"})
	log.waitPolls(t, 2)
	if _, err := e.web.Send(t.Context(), core.Reply{To: a, Text: "the end"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) == 0 || !strings.Contains(got[len(got)-1], "the end") {
		ev := readEvent(t, r)
		got = append(got, ev.data)
	}
	want := []string{"sent here", "sent by replica B", "committed earlier, visible later", "the end"}
	if len(got) != len(want) {
		t.Fatalf("the page got %d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("event %d = %s, want %q", i+1, got[i], w)
		}
	}
	e.web.mu.Lock()
	bobs := e.web.convos[address("bob", "live").SessionID()]
	e.web.mu.Unlock()
	if bobs != nil {
		t.Error("a reply for a conversation not open here created it")
	}
}
