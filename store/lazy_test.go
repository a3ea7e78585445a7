package store

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// TestLazyCommit: a lazy change is committed like any other (visible, atomic) and
// waits for no fsync; every durable write (a decision, a tool run's start, pruning)
// returns after an fsync of its own, and the writer stays at synchronous=NORMAL
// throughout: no level is switched between them.
func TestLazyCommit(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "s1", Phase: core.PhaseOff, Owner: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	last := s.GroupStats()
	// synced checks the writer's level and that the write before waited for an fsync
	// (durable) or for none.
	synced := func(after string, durable bool) {
		t.Helper()
		var sync int
		if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if sync != 1 {
			t.Errorf("synchronous = %d after %s, want 1 (NORMAL)", sync, after)
		}
		st, want := s.GroupStats(), int64(0)
		if durable {
			want = 1
		}
		if st.Waited-last.Waited != want || st.Durable-last.Durable != want {
			t.Errorf("after %s: %d waits for %d fsyncs, want %d and %d", after, st.Waited-last.Waited, st.Durable-last.Durable, want, want)
		}
		last = st
	}
	lazy := func() {
		t.Helper()
		if err := s.SetChannelStateLazy(ctx, "t", "a", "k", "v"); err != nil {
			t.Fatal(err)
		}
		synced("a lazy save", false)
	}
	if cur, err = s.Commit(ctx, core.Change{Session: &cur, Lazy: true,
		Inbound:  &core.InboundKey{Channel: "telegram", Account: "1", EventID: "7"},
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	synced("a lazy commit", false)
	lazy()
	if _, err := s.Commit(ctx, core.Change{Session: &cur}); err != nil {
		t.Fatal(err)
	}
	synced("a durable commit after lazy ones", true)
	lazy()
	if err := s.StartToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "c1", Tool: "write_file"}); err != nil {
		t.Fatal(err)
	}
	synced("a tool run's start after a lazy commit", true)
	lazy()
	if _, err := s.PruneOutbox(ctx, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	synced("pruning after a lazy commit", true)
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
