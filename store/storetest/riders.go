package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/plangate/plangate/core"
)

// testSentSoon: a mark made with MarkSentSoon is written no later than the instance's
// next write of any kind, FlushSent, or Close (both drivers queue it for the next
// write); a write that carries it and fails still leaves the row
// marked (a lost mark would send a reply twice after a restart).
func testSentSoon(t *testing.T, open func() Store) {
	ctx := context.Background()
	s, other := open(), open()
	cur := seed(t, s, "s1")
	out := make([]core.Outgoing, 5)
	for i := range out {
		out[i] = core.Outgoing{Reply: core.Reply{To: cur.Address, Text: "reply"}, CreatedAt: at(i)}
	}
	cur = commit(t, s, core.Change{Session: &cur, Outbox: out})
	unsent := func() []int64 {
		t.Helper()
		rows, err := other.UnsentOutbox(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, o := range rows {
			ids = append(ids, o.ID)
		}
		return ids
	}
	ids := func(is ...int) []int64 {
		var x []int64
		for _, i := range is {
			x = append(x, out[i].ID)
		}
		return x
	}

	mark := func(i int) {
		t.Helper()
		if err := s.MarkSentSoon(ctx, out[i].ID, fmt.Sprintf("m%d", i), at(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	mark(0)
	if _, ok, err := s.AcquireLease(ctx, "session:s1", "a", at(10), 30e9); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	if got := unsent(); !slices.Equal(got, ids(1, 2, 3, 4)) {
		t.Fatalf("the lease write did not carry the mark: unsent %v", got)
	}

	// A commit that loses its compare-and-set undoes what it carried; the mark is then
	// written on its own.
	mark(1)
	stale := cur
	stale.Version--
	if _, err := s.Commit(ctx, core.Change{Session: &stale}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("stale commit = %v, want a conflict", err)
	}
	if got := unsent(); !slices.Equal(got, ids(2, 3, 4)) {
		t.Fatalf("the failed carrier lost the mark: unsent %v", got)
	}

	mark(2)
	if err := s.FlushSent(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushSent(ctx); err != nil { // nothing queued: nothing to do
		t.Fatal(err)
	}
	// A dropped row stays dropped (the mark changes only a row neither sent nor dropped).
	if err := s.DropOutbox(ctx, out[3].ID, "too old"); err != nil {
		t.Fatal(err)
	}
	mark(3)
	mark(4)
	if got := unsent(); !slices.Equal(got, ids(4)) && len(got) != 0 { // 4 may wait for a write
		t.Fatalf("after FlushSent: unsent %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := unsent(); len(got) != 0 {
		t.Fatalf("Close did not write the queued marks: unsent %v", got)
	}
	// Pruning takes every finished row created before the cut, the newest one too.
	if n, err := other.PruneOutbox(ctx, at(20)); err != nil || n != 5 {
		t.Fatalf("PruneOutbox = %d, %v; want the 4 sent and the dropped one", n, err)
	}
}
