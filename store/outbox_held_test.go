package store

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/plangate/plangate/core"
)

// The held rows of outbox_floor.go: a reply whose sends keep failing no longer holds
// its channel's floor; the floor passes it, and each list looks it up by id.

// mustList lists chans through s and compares the ids with a scan of the whole table
// and with want.
func mustList(t *testing.T, s *Store, chans []string, limit int, want ...core.Outgoing) {
	t.Helper()
	got := unsentIDs(t, s, chans, limit)
	if table := idsOf(scanAll(t, s, chans, limit)); !reflect.DeepEqual(got, table) || !reflect.DeepEqual(got, idsOf(want)) {
		t.Fatalf("UnsentOutbox(%v, %d) = %v; the table %v, want %v", chans, limit, got, table, idsOf(want))
	}
}

func markSent(t *testing.T, s *Store, o core.Outgoing) {
	t.Helper()
	if err := s.MarkSent(context.Background(), o.ID, "m", at(50)); err != nil {
		t.Fatal(err)
	}
}

// One reply fails for good while 2,000 others are committed and sent, by this store and
// another on the file. After every list the floor is past the newest row: a list reads
// the failing row by id and the rows since the last list, not everything after the
// failing one. The other store drops it; the next list finds it gone.
func TestUnsentHeldFailingRowThenThousands(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openSecond(t, path)
	tg := []string{"telegram"}
	failing := reply(t, a, "telegram", at(0))
	mustList(t, a, tg, 0, failing)
	var last core.Outgoing
	for i := range 2000 {
		s := []*Store{a, b}[i%2]
		last = reply(t, s, []string{"telegram", "slack"}[i%3/2], at(1))
		if i%10 == 9 { // listed while in flight: held, then found sent
			mustList(t, a, nil, 0, failing, last)
			want := []core.Outgoing{last}
			if last.Reply.To.Channel == "telegram" {
				want = []core.Outgoing{failing, last}
			}
			mustList(t, a, []string{last.Reply.To.Channel}, 0, want...)
		}
		markSent(t, s, last)
		if i%10 == 0 {
			mustList(t, a, [][]string{tg, nil}[i%20/10], 0, failing)
			wantFloor(t, a, [][]string{tg, nil}[i%20/10], last.ID+1, failing)
		}
	}
	mustList(t, a, tg, 0, failing)
	wantFloor(t, a, tg, last.ID+1, failing)
	if err := b.DropOutbox(ctx, failing.ID, "blocked"); err != nil {
		t.Fatal(err)
	}
	mustList(t, a, tg, 0)
	wantFloor(t, a, tg, last.ID+1)
	mustList(t, a, nil, 0)
	wantFloor(t, a, nil, last.ID+1)
}

// Held rows come first in a list (they are the oldest) and count against its limit;
// when they fill it, the floor stays where it was.
func TestUnsentHeldLimits(t *testing.T) {
	a, path := openTest(t)
	b := openSecond(t, path)
	tg := []string{"telegram"}
	f1, f2, f3 := reply(t, a, "telegram", at(1)), reply(t, a, "telegram", at(2)), reply(t, a, "telegram", at(3))
	mustList(t, a, tg, 0, f1, f2, f3)
	wantFloor(t, a, tg, f3.ID+1, f1, f2, f3)
	t4, t5 := reply(t, b, "telegram", at(4)), reply(t, b, "telegram", at(5))
	mustList(t, a, tg, 2, f1, f2)
	wantFloor(t, a, tg, f3.ID+1, f1, f2, f3)
	mustList(t, a, tg, 3, f1, f2, f3)
	wantFloor(t, a, tg, f3.ID+1, f1, f2, f3)
	mustList(t, a, tg, 4, f1, f2, f3, t4)
	wantFloor(t, a, tg, t4.ID+1, f1, f2, f3, t4)
	markSent(t, b, f2)
	mustList(t, a, tg, 2, f1, f3)
	wantFloor(t, a, tg, t4.ID+1, f1, f3, t4) // the lookup found f2 sent, even with the limit
	markSent(t, b, f1)
	mustList(t, a, tg, 3, f3, t4, t5)
	wantFloor(t, a, tg, t5.ID+1, f3, t4, t5)
	mustList(t, a, nil, 1, f3)
	mustList(t, a, nil, 0, f3, t4, t5)
}

// A held row of one channel is never listed for another, nor looked up by its lists;
// the floors stay per channel.
func TestUnsentHeldChannels(t *testing.T) {
	a, path := openTest(t)
	b := openSecond(t, path)
	tg, sl := []string{"telegram"}, []string{"slack"}
	f := reply(t, a, "telegram", at(1))
	mustList(t, a, tg, 0, f)
	s1 := reply(t, b, "slack", at(2))
	mustList(t, a, sl, 0, s1)
	wantFloor(t, a, sl, s1.ID+1, s1)
	wantFloor(t, a, tg, f.ID+1, f)
	markSent(t, b, s1)
	mustList(t, a, sl, 0)
	wantFloor(t, a, sl, s1.ID+1)
	mustList(t, a, []string{"web", "slack"}, 0)
	markSent(t, b, f)
	mustList(t, a, sl, 0) // a slack list does not look up telegram's rows
	wantFloor(t, a, tg, f.ID+1, f)
	mustList(t, a, []string{"slack", "telegram"}, 0)
	wantFloor(t, a, tg, s1.ID+1)
	w := reply(t, b, "web", at(3))
	mustList(t, a, nil, 0, w)
	mustList(t, a, tg, 0)
	mustList(t, a, []string{"web"}, 0, w)
	wantFloor(t, a, []string{"web"}, w.ID+1, w)
}

// With room for two held rows, a floor stops at the first unsent row it cannot hold,
// and passes it once a held row is found sent.
func TestUnsentHeldFull(t *testing.T) {
	a, path := openTest(t)
	b := openSecond(t, path)
	a.floors.hold = 2
	tg := []string{"telegram"}
	f1, f2, f3 := reply(t, a, "telegram", at(1)), reply(t, a, "telegram", at(2)), reply(t, a, "telegram", at(3))
	s1 := reply(t, a, "slack", at(4))
	mustList(t, a, tg, 0, f1, f2, f3)
	wantFloor(t, a, tg, f3.ID, f1, f2)
	mustList(t, a, []string{"slack"}, 0, s1)
	wantFloor(t, a, []string{"slack"}, s1.ID) // held is full: slack's floor stops at its row
	mustList(t, a, nil, 0, f1, f2, f3, s1)
	wantFloor(t, a, nil, f3.ID, f1, f2)
	markSent(t, b, f2)
	mustList(t, a, nil, 0, f1, f3, s1)
	wantFloor(t, a, nil, s1.ID, f1, f3)
	markSent(t, b, f1)
	markSent(t, b, s1)
	mustList(t, a, nil, 0, f3)
	wantFloor(t, a, nil, s1.ID+1, f3)
	mustList(t, a, tg, 0, f3)
}

// A held row survives prunes while it is unsent; once dropped and pruned (by another
// store) its lookup finds nothing and it is no longer held. The kept newest row keeps
// new ids above the floor throughout.
func TestUnsentHeldPrune(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openSecond(t, path)
	f := reply(t, a, "telegram", at(1))
	mustList(t, a, nil, 0, f)
	var sent core.Outgoing
	for i := range 20 {
		sent = reply(t, b, "telegram", at(2+i))
		markSent(t, b, sent)
	}
	mustList(t, a, nil, 0, f)
	if n, err := b.PruneOutbox(ctx, at(59)); err != nil || n != 19 {
		t.Fatalf("PruneOutbox = %d, %v; want every sent row but the newest", n, err)
	}
	mustList(t, a, nil, 0, f)
	wantFloor(t, a, nil, sent.ID+1, f)
	if err := b.DropOutbox(ctx, f.ID, "too old"); err != nil {
		t.Fatal(err)
	}
	if n, err := b.PruneOutbox(ctx, at(59)); err != nil || n != 1 {
		t.Fatalf("PruneOutbox = %d, %v; want the dropped row", n, err)
	}
	next := reply(t, b, "telegram", at(59))
	mustList(t, a, nil, 0, next)
	wantFloor(t, a, nil, next.ID+1, next)
}

// A copy into a new file keeps the ids: its unsent row is held by the target's floor like
// any other, and found sent when another store on the target marks it.
func TestUnsentHeldAfterCopy(t *testing.T) {
	ctx := context.Background()
	src, _ := openTest(t)
	f := reply(t, src, "telegram", at(1))
	sent := reply(t, src, "telegram", at(2))
	markSent(t, src, sent)
	mustList(t, src, nil, 0, f)
	dst, path := openTest(t)
	mustList(t, dst, nil, 0)
	if _, err := Copy(ctx, dst, src); err != nil {
		t.Fatal(err)
	}
	mustList(t, dst, nil, 0, f)
	for range 5 {
		markSent(t, dst, reply(t, dst, "telegram", at(3)))
	}
	mustList(t, dst, []string{"telegram"}, 0, f)
	top := reply(t, dst, "slack", at(4))
	markSent(t, dst, top)
	mustList(t, dst, nil, 0, f)
	wantFloor(t, dst, nil, top.ID+1, f)
	markSent(t, openSecond(t, path), f)
	mustList(t, dst, nil, 0)
	wantFloor(t, dst, nil, top.ID+1)
}

// A held row another store marks sent between a list's read of max(id) and its lookup is
// not listed, and a reply committed there is listed by the next list.
func TestUnsentHeldMarkedBetweenTheReads(t *testing.T) {
	a, path := openTest(t)
	b := openSecond(t, path)
	f1, f2 := reply(t, a, "telegram", at(1)), reply(t, a, "telegram", at(2))
	mustList(t, a, nil, 0, f1, f2)
	var late core.Outgoing
	a.floors.between = func() {
		markSent(t, b, f1)
		late = reply(t, b, "telegram", at(3))
		a.floors.between = nil
	}
	if got := unsentIDs(t, a, nil, 0); !slices.Equal(got, []int64{f2.ID}) && !slices.Equal(got, []int64{f2.ID, late.ID}) {
		t.Fatalf("UnsentOutbox = %v during a mark of %d and a reply %d; want %d first, %d or not", got, f1.ID, late.ID, f2.ID, late.ID)
	}
	mustList(t, a, nil, 0, f2, late)
	mustList(t, a, []string{"telegram"}, 0, f2, late)
}
