package store

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// TestSentMarkRidesTheNextWrite (SQLite): MarkSentSoon writes nothing itself; the next
// write carries the mark in its transaction, so marking adds no transaction of its own.
func TestSentMarkRidesTheNextWrite(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	out := []core.Outgoing{{Reply: core.Reply{To: core.Address{Channel: "t", Chat: "1"}, Text: "hi"}}}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Outbox: out}); err != nil {
		t.Fatal(err)
	}
	unsent := func() int {
		t.Helper()
		rows, err := s.UnsentOutbox(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	before := s.GroupStats()
	if err := s.MarkSentSoon(ctx, out[0].ID, "p1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := unsent(); n != 1 || s.GroupStats() != before {
		t.Fatalf("after MarkSentSoon: %d unsent, stats %+v (before %+v); want the mark queued, nothing written", n, s.GroupStats(), before)
	}
	if _, ok, err := s.AcquireLease(ctx, "session:s1", "me", time.Now(), time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n := unsent(); n != 0 {
		t.Fatalf("after the lease write: %d unsent, want the mark carried", n)
	}
	if st := s.GroupStats(); st.Batches != before.Batches+1 {
		t.Fatalf("transactions: %d, want 1 (the lease's, carrying the mark)", st.Batches-before.Batches)
	}
}
