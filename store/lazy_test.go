package store

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// TestLazyCommit: a lazy change is committed like any other (visible, atomic); the
// writer connection stays at synchronous=NORMAL for the next lazy commit, and every
// durable write after it (a decision, a tool run's start, pruning) runs at FULL.
func TestLazyCommit(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "s1", Phase: core.PhaseOff, Owner: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	level := func(after string, want int) {
		t.Helper()
		var sync int
		if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if sync != want {
			t.Fatalf("synchronous = %d after %s, want %d", sync, after, want)
		}
	}
	level("a durable commit", 2)
	lazy := func() {
		t.Helper()
		if err := s.SetChannelStateLazy(ctx, "t", "a", "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	if cur, err = s.Commit(ctx, core.Change{Session: &cur, Lazy: true,
		Inbound:  &core.InboundKey{Channel: "telegram", Account: "1", EventID: "7"},
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	level("a lazy commit", 1)
	lazy()
	level("two lazy commits", 1)
	if _, err := s.Commit(ctx, core.Change{Session: &cur}); err != nil {
		t.Fatal(err)
	}
	level("a durable commit after lazy ones", 2)
	lazy()
	if err := s.StartToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "c1", Tool: "write_file"}); err != nil {
		t.Fatal(err)
	}
	level("a tool run's start after a lazy commit", 2)
	lazy()
	if _, err := s.PruneOutbox(ctx, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	level("pruning after a lazy commit", 2)
	// A new process sees it.
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	tr, err := s2.Transcript(ctx, "s1", 0)
	if err != nil || len(tr) != 1 || tr[0].Content != "hello" {
		t.Fatalf("transcript after reopen: %+v, %v", tr, err)
	}
	if seen, err := s2.SeenInbound(ctx, core.InboundKey{Channel: "telegram", Account: "1", EventID: "7"}); err != nil || !seen {
		t.Fatalf("inbound after reopen: %v, %v", seen, err)
	}
}
