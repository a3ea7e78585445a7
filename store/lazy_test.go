package store

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestLazyCommit: a lazy change is committed like any other (visible, atomic) and the
// writer connection is back at synchronous=FULL afterwards, so the next decision is synced.
func TestLazyCommit(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "s1", Phase: core.PhaseOff, Owner: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, core.Change{Session: &cur, Lazy: true,
		Inbound:  &core.InboundKey{Channel: "telegram", Account: "1", EventID: "7"},
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	var sync int
	if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if sync != 2 {
		t.Fatalf("synchronous = %d after a lazy commit, want 2 (FULL)", sync)
	}
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
