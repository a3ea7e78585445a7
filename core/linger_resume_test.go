package core_test

import (
	"context"
	"strings"
	"testing"
)

// A Resume that runs while this process lingers on a session (a replica's takeover
// resumes every session when another replica dies; a retry once another process's lease
// would expire) finds a message another process left meanwhile. Nothing restarted: it is
// answered, once, without a restart notice.
func TestResumeWhileLingeringTellsNoRestart(t *testing.T) {
	h := newHarness(t)
	a := newLingerer(t, h, "test-lingerer-a")
	b := h.process(nil, nil, nil)
	h.waitOnCleanup(b.eng)
	a.say(t, h, "ev-a", "hello")
	if err := b.eng.Handle(context.Background(), evMsg(h, "a", "ev-b", "also this")); err != nil {
		t.Fatal(err)
	}
	before := a.out.count()
	if n, err := a.eng.Resume(context.Background(), nil); err != nil || n != 1 {
		t.Fatalf("Resume: %d, %v; want the session with B's message", n, err)
	}
	rs := a.out.since(before)
	for _, r := range rs {
		if strings.Contains(r.Text, "restarted") {
			t.Fatalf("A told the chat it restarted: %+v", rs)
		}
	}
	reqs := a.model.requests()
	if len(reqs) != 2 || len(rs) != 1 {
		t.Fatalf("%d model calls, replies %+v; want 2 calls and one answer to B's message", len(reqs), rs)
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Content != "also this" {
		t.Fatalf("A's second turn ended with %+v, want B's message", last)
	}
	a.endLingers(t)
	if n := len(a.model.requests()); n != 2 || b.out.count() != 0 {
		t.Fatalf("after the linger: %d model calls, B replies %d; want 2, 0", n, b.out.count())
	}
}
