package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/plangate/plangate/core"
)

// testMarkSent: a mark made with MarkSent is written when it returns, visible to every
// instance, and no later failed write undoes it (a lost mark would send a reply twice
// after a restart). A mark changes only a row neither sent nor dropped: a dropped row
// stays dropped, and a second mark of a sent row changes nothing.
func testMarkSent(t *testing.T, open func() Store) {
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
	mark := func(i int, platformID string) {
		t.Helper()
		if err := s.MarkSent(ctx, out[i].ID, platformID, at(10+i)); err != nil {
			t.Fatal(err)
		}
	}

	mark(0, "m0")
	if got := unsent(); !slices.Equal(got, ids(1, 2, 3, 4)) {
		t.Fatalf("after MarkSent: unsent %v, want the mark visible at once", got)
	}
	// A commit that loses its compare-and-set afterwards leaves the mark.
	mark(1, "m1")
	stale := cur
	stale.Version--
	if _, err := s.Commit(ctx, core.Change{Session: &stale}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("stale commit = %v, want a conflict", err)
	}
	if got := unsent(); !slices.Equal(got, ids(2, 3, 4)) {
		t.Fatalf("the failed commit undid a mark: unsent %v", got)
	}
	if err := s.DropOutbox(ctx, out[3].ID, "too old"); err != nil {
		t.Fatal(err)
	}
	if err := s.DropOutbox(ctx, out[2].ID, "refused"); err != nil {
		t.Fatal(err)
	}
	// Drops are listed newest first with their reason, by every instance, and a row once
	// dropped is neither sent nor dropped again.
	for _, st := range []Store{s, other} {
		d, err := st.DroppedOutbox(ctx, 0, 0)
		if err != nil || len(d) != 2 || d[0].ID != out[3].ID || d[0].Dropped != "too old" || d[1].ID != out[2].ID || d[1].Dropped != "refused" ||
			d[0].Reply.Text != out[3].Reply.Text || d[0].SessionID != cur.ID {
			t.Fatalf("DroppedOutbox = %+v, %v; want rows %d (too old) and %d (refused)", d, err, out[3].ID, out[2].ID)
		}
	}
	if d, err := other.DroppedOutbox(ctx, 0, 1); err != nil || len(d) != 1 || d[0].ID != out[3].ID {
		t.Fatalf("DroppedOutbox(limit 1) = %+v, %v; want the newest drop", d, err)
	}
	if err := s.DropOutbox(ctx, out[2].ID, "again"); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 5; i++ {
		mark(i, fmt.Sprintf("m%d", i))
	}
	mark(4, "again")
	if got := unsent(); len(got) != 0 {
		t.Fatalf("after marking every row: unsent %v", got)
	}
	sent, err := other.SentSince(ctx, cur.Address.Channel, at(-1), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, o := range sent {
		got = append(got, o.ID)
		if o.Attempts != 1 {
			t.Errorf("sent row %d has %d attempts, want 1 (a second mark changes nothing)", o.ID, o.Attempts)
		}
	}
	if want := ids(0, 1, 4); !slices.Equal(got, want) {
		t.Fatalf("sent rows %v, want %v (the dropped ones stay dropped)", got, want)
	}
	// Pruning takes every finished row created before the cut, the newest one too.
	if n, err := other.PruneOutbox(ctx, at(20)); err != nil || n != 5 {
		t.Fatalf("PruneOutbox = %d, %v; want the 3 sent and the 2 dropped", n, err)
	}
}
