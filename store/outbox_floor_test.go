package store

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// reply commits one reply of channel through s and returns its row.
func reply(t *testing.T, s *Store, channel string, created time.Time) core.Outgoing {
	t.Helper()
	to := core.Address{Channel: channel, Account: "a", Chat: "c"}
	out := []core.Outgoing{{Reply: core.Reply{To: to, Text: "to " + channel}, CreatedAt: created}}
	if _, err := s.Commit(context.Background(), core.Change{SessionID: to.SessionID(), Outbox: out}); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// unsentIDs lists s's unsent ids through UnsentOutbox (the floor).
func unsentIDs(t *testing.T, s *Store, channels []string, limit int) []int64 {
	t.Helper()
	rows, err := s.UnsentOutbox(context.Background(), channels, limit)
	if err != nil {
		t.Fatal(err)
	}
	return idsOf(rows)
}

func idsOf(rows []core.Outgoing) []int64 {
	ids := []int64{}
	for _, o := range rows {
		ids = append(ids, o.ID)
	}
	return ids
}

// scanAll is UnsentOutbox without a floor: the query PostgreSQL runs, over the whole table.
func scanAll(t *testing.T, s *Store, channels []string, limit int) []core.Outgoing {
	t.Helper()
	q, args := unsentQuery(channels, limit, nil, nil)
	rows, err := s.r.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scanOutbox(rows, "unsent", nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openSecond(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A store that saw every reply sent has its floor past them; another process on the file
// prunes them all and commits a new reply. The prune keeps the newest row, so the new
// reply's id is above the floor and the first store lists it. The second half shows what
// that rule prevents: an outbox emptied behind the store's back (a raw DELETE, which
// plangate never runs) gives the next reply a used id, under the floor.
func TestUnsentFloorAfterPruningTheNewest(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openSecond(t, path)
	var sent []core.Outgoing
	for i := range 3 {
		o := reply(t, a, "telegram", at(i))
		if err := a.MarkSent(ctx, o.ID, "m", at(i)); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, o)
	}
	top := sent[2].ID
	if got := unsentIDs(t, a, nil, 0); len(got) != 0 {
		t.Fatalf("unsent %v, want none", got)
	}
	if got := unsentIDs(t, a, []string{"telegram"}, 0); len(got) != 0 {
		t.Fatalf("unsent telegram %v, want none", got)
	}
	if f, _ := a.floors.from(nil); f != top+1 {
		t.Fatalf("floor of all %d, want %d (past the sent rows)", f, top+1)
	}
	if n, err := b.PruneOutbox(ctx, at(100)); err != nil || n != 2 {
		t.Fatalf("PruneOutbox = %d, %v; want the two older rows, the newest kept", n, err)
	}
	o := reply(t, b, "telegram", at(4))
	if o.ID != top+1 {
		t.Fatalf("the reply after the prune got id %d, want %d", o.ID, top+1)
	}
	for _, chans := range [][]string{nil, {"telegram"}} {
		if got := unsentIDs(t, a, chans, 0); !reflect.DeepEqual(got, []int64{o.ID}) {
			t.Fatalf("a lists %v for %v after b's prune and reply %d", got, chans, o.ID)
		}
	}

	if err := a.MarkSent(ctx, o.ID, "m", at(4)); err != nil {
		t.Fatal(err)
	}
	if got := unsentIDs(t, a, nil, 0); len(got) != 0 {
		t.Fatalf("unsent %v, want none", got)
	}
	if _, err := b.w.ExecContext(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	reused := reply(t, b, "telegram", at(5))
	if reused.ID > o.ID {
		t.Fatalf("after an emptied outbox the next id is %d: SQLite no longer reuses ids, and this test no longer shows why the newest row is kept", reused.ID)
	}
	if got := unsentIDs(t, a, nil, 0); len(got) != 0 {
		t.Fatalf("a listed %v: the floor was not past reply %d, so the first half proved nothing", got, reused.ID)
	}
	if got := unsentIDs(t, openSecond(t, path), nil, 0); !reflect.DeepEqual(got, []int64{reused.ID}) {
		t.Fatalf("a new store (from 0) lists %v, want [%d]", got, reused.ID)
	}
}

// wantFloor checks where a list of chans through s would start, and the held rows it
// would look up.
func wantFloor(t *testing.T, s *Store, chans []string, floor int64, held ...core.Outgoing) {
	t.Helper()
	f, h := s.floors.from(chans)
	if f != floor || !slices.Equal(h, idsOf(held)) {
		t.Fatalf("floor of %v at %d holding %v, want %d holding %v", chans, f, h, floor, idsOf(held))
	}
}

// The floor of one channel never hides another channel's rows, and a LIMIT that cuts the
// list moves the floor only up to the last row listed.
func TestUnsentFloorChannelsAndLimit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t1, s1, t2, t3 := reply(t, s, "telegram", at(1)), reply(t, s, "slack", at(2)), reply(t, s, "telegram", at(3)), reply(t, s, "telegram", at(4))
	tg := []string{"telegram"}
	mark := func(o core.Outgoing) {
		t.Helper()
		if err := s.MarkSent(ctx, o.ID, "m", at(5)); err != nil {
			t.Fatal(err)
		}
	}
	want := func(chans []string, limit int, rows ...core.Outgoing) {
		t.Helper()
		if got, w := unsentIDs(t, s, chans, limit), idsOf(rows); !reflect.DeepEqual(got, w) {
			t.Fatalf("UnsentOutbox(%v, %d) = %v, want %v", chans, limit, got, w)
		}
	}
	want(tg, 1, t1)
	mark(t1)
	want(tg, 1, t2)
	wantFloor(t, s, tg, t2.ID+1, t2)
	want([]string{"slack"}, 0, s1)
	want(nil, 1, s1)
	mark(t2)
	want(tg, 1, t3)
	want([]string{"slack", "telegram"}, 0, s1, t3)
	want(tg, 0, t3)
	want(nil, 0, s1, t3)
	want([]string{"web"}, 0)
	mark(t3)
	want(tg, 0)
	wantFloor(t, s, tg, t3.ID+1)
	wantFloor(t, s, []string{"slack"}, t3.ID+1, s1)
	want(nil, 0, s1)
	w1 := reply(t, s, "web", at(6))
	want(tg, 0)
	want(nil, 0, s1, w1)
	want([]string{"web", "telegram"}, 0, w1)
	if err := s.DropOutbox(ctx, s1.ID, "too old"); err != nil {
		t.Fatal(err)
	}
	want(nil, 0, w1)
	wantFloor(t, s, nil, w1.ID+1, w1)
}

// Two stores on one file commit, mark, drop, prune and list at random; every list through
// the floor equals a scan of the whole table. Prunes run with a cut past every row, so
// the newest rows go often and ids would be reused if the newest were not kept. One
// reply in 60 fails: no mark or drop takes it for 50 to 600 steps, so it stays unsent for hundreds of steps while the floors pass them (held), and are marked
// or dropped by either store, the one that holds them or the other. With hold 2 the held
// rows overflow and the floors stop at the first row they cannot hold.
func TestUnsentFloorTwoStoresAtRandom(t *testing.T) {
	for _, hold := range []int{0, 2} {
		t.Run(fmt.Sprintf("hold=%d", hold), func(t *testing.T) { unsentAtRandom(t, hold) })
	}
}

func unsentAtRandom(t *testing.T, hold int) {
	ctx := context.Background()
	a, path := openTest(t)
	stores := []*Store{a, openSecond(t, path)}
	for _, s := range stores {
		s.floors.hold = hold
	}
	chans := []string{"telegram", "slack", "web"}
	rng := rand.New(rand.NewPCG(13, uint64(12+hold)))
	minute, lists, nonEmpty, pruned, reused := 0, 0, 0, int64(0), 0
	failing := map[int64][2]int{} // failing reply -> the step it was committed at, the step its sends stop failing at
	passed, oldest, full := 0, 0, 0
	var top int64
	for step := range 4000 {
		s := stores[rng.IntN(len(stores))]
		switch op := rng.IntN(20); {
		case op < 5:
			minute++
			o := reply(t, s, chans[rng.IntN(len(chans))], at(minute))
			if o.ID <= top {
				reused++
			}
			top = max(top, o.ID)
			if rng.IntN(60) == 0 {
				failing[o.ID] = [2]int{step, step + 50 + rng.IntN(550)}
			}
		case op < 11:
			all := scanAll(t, s, nil, 0)
			if op == 5 { // everything that does not fail sent: the floors pass every other row
				for _, o := range all {
					if _, ok := failing[o.ID]; ok {
						continue
					}
					if err := s.MarkSent(ctx, o.ID, "m", at(minute)); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			if len(all) == 0 {
				continue
			}
			o := all[rng.IntN(len(all))]
			if f, ok := failing[o.ID]; ok {
				if step < f[1] {
					continue
				}
				oldest = max(oldest, step-f[0])
				delete(failing, o.ID)
			}
			var err error
			switch op {
			case 6:
				err = s.DropOutbox(ctx, o.ID, "too old")
			case 7:
				err = s.MarkSentSoon(ctx, o.ID, "m", at(minute)) // rides s's next write
			default:
				err = s.MarkSent(ctx, o.ID, "m", at(minute))
			}
			if err != nil {
				t.Fatal(err)
			}
		case op == 11:
			n, err := s.PruneOutbox(ctx, at(minute+1))
			if err != nil {
				t.Fatal(err)
			}
			pruned += n
		default:
			var pick []string
			for _, c := range chans {
				if rng.IntN(2) == 0 {
					pick = append(pick, c)
				}
			}
			limit := []int{0, 0, 1, 2}[rng.IntN(4)]
			got, err := s.UnsentOutbox(ctx, pick, limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := scanAll(t, s, pick, limit); !reflect.DeepEqual(idsOf(got), idsOf(want)) {
				t.Fatalf("step %d: UnsentOutbox(%v, %d) = %v, a scan of the table %v", step, pick, limit, idsOf(got), idsOf(want))
			}
			lists++
			if len(got) > 0 {
				nonEmpty++
			}
			if _, held := s.floors.from(pick); slices.ContainsFunc(held, func(id int64) bool { _, ok := failing[id]; return ok }) {
				passed++ // the floor is past a failing row
			}
			s.floors.mu.Lock()
			if n := len(s.floors.held); n > cmp.Or(hold, maxHeld) {
				t.Fatalf("step %d: %d rows held, more than %d", step, n, cmp.Or(hold, maxHeld))
			} else if hold > 0 && n == hold {
				full++
			}
			s.floors.mu.Unlock()
		}
	}
	if reused != 0 {
		t.Fatalf("%d replies got an id not above the newest before them", reused)
	}
	if lists < 1000 || nonEmpty < 300 || lists-nonEmpty < 150 || pruned < 500 || passed < 500 || oldest < 300 || hold > 0 && full < 100 {
		t.Fatalf("the walk exercised too little: %d lists (%d not empty, %d past a failing row, %d with the held rows full), %d rows pruned, a failing row unsent for %d steps",
			lists, nonEmpty, passed, full, pruned, oldest)
	}
	t.Logf("%d lists, %d not empty, %d past a failing row, %d with the held rows full, %d rows pruned, ids up to %d, a failing row unsent for %d steps",
		lists, nonEmpty, passed, full, pruned, top, oldest)
}

// The scan from the floor is a range of the rowid, not a scan of the table, the held rows
// are searched by key, and the index it replaces is gone.
func TestUnsentFloorPlan(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	for _, c := range []struct {
		chans []string
		held  []int64
		want  string
	}{
		{nil, nil, "SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)"},
		{[]string{"telegram", "slack"}, nil, "SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)"},
		{nil, []int64{3}, "MERGE (UNION ALL); LEFT; SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?); RIGHT; SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)"},
		{[]string{"telegram"}, []int64{3, 8, 11}, "MERGE (UNION ALL); LEFT; SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?); RIGHT; SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)"},
	} {
		chans := c.chans
		q, args := unsentQuery(chans, 5, new(int64), c.held)
		rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, c.want) || strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "SCAN outbox") {
			t.Errorf("plan for %v, held %v: %s", chans, c.held, p)
		}
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name = 'outbox_unsent'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("outbox_unsent: %d, %v; want it dropped", n, err)
	}
}

// Migration 0012 takes a file at version 11 with unsent and sent replies in it: the index
// goes, the rows stay, and the unsent are listed.
func TestMigration0012(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	w := migratedTo(t, path, 11)
	for i := range 4 {
		var sent any
		if i%2 == 0 {
			sent = formatTime(at(2))
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, sent_at) VALUES ('s', 'telegram', ?, ?, ?)`,
			fmt.Sprintf(`{"text":"r%d"}`, i), formatTime(at(1)), sent); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE name = 'outbox_unsent'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("outbox_unsent: %d, %v; want it dropped", n, err)
	}
	rows, err := s.UnsentOutbox(ctx, []string{"telegram"}, 0)
	if err != nil || len(rows) != 2 || rows[0].ID != 2 || rows[1].ID != 4 || rows[1].Reply.Text != "r3" {
		t.Fatalf("unsent after 0012: %+v, %v", rows, err)
	}
}

// `plangate store copy` keeps the ids: a copy of a pruned outbox into a new file lists
// the same unsent rows, and the target's next reply gets an id above the copied ones.
func TestUnsentFloorAfterCopy(t *testing.T) {
	ctx := context.Background()
	src, _ := openTest(t)
	var rows []core.Outgoing
	for i := range 6 {
		rows = append(rows, reply(t, src, []string{"telegram", "slack"}[i%2], at(i)))
	}
	for _, i := range []int{0, 1, 2, 4, 5} {
		if err := src.MarkSent(ctx, rows[i].ID, "m", at(10)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := src.PruneOutbox(ctx, at(2)); err != nil || n != 2 {
		t.Fatalf("PruneOutbox = %d, %v", n, err)
	}
	dst, _ := openTest(t)
	if _, err := dst.UnsentOutbox(ctx, nil, 0); err != nil { // a floor on the empty outbox
		t.Fatal(err)
	}
	if _, err := Copy(ctx, dst, src); err != nil {
		t.Fatal(err)
	}
	if got := unsentIDs(t, dst, nil, 0); !reflect.DeepEqual(got, []int64{rows[3].ID}) {
		t.Fatalf("unsent in the copy %v, want [%d]", got, rows[3].ID)
	}
	next := reply(t, dst, "telegram", at(11))
	if next.ID != rows[5].ID+1 {
		t.Fatalf("the copy's next reply got id %d, want %d", next.ID, rows[5].ID+1)
	}
	if got := unsentIDs(t, dst, []string{"telegram"}, 0); !reflect.DeepEqual(got, []int64{next.ID}) {
		t.Fatalf("unsent telegram in the copy %v, want [%d]", got, next.ID)
	}
	if got := unsentIDs(t, dst, nil, 0); !reflect.DeepEqual(got, []int64{rows[3].ID, next.ID}) {
		t.Fatalf("unsent in the copy %v", got)
	}
}

// A reply another store commits between a list's read of max(id) and its scan is
// above that max: the list may show it or not, and the next list shows it.
func TestUnsentFloorReplyBetweenTheReads(t *testing.T) {
	a, path := openTest(t)
	b := openSecond(t, path)
	o := reply(t, a, "telegram", at(1))
	if err := a.MarkSent(context.Background(), o.ID, "m", at(1)); err != nil {
		t.Fatal(err)
	}
	var late core.Outgoing
	a.floors.between = func() { late = reply(t, b, "telegram", at(2)); a.floors.between = nil }
	unsentIDs(t, a, []string{"telegram"}, 0)
	if late.ID == 0 {
		t.Fatal("the list did not run the hook")
	}
	for _, chans := range [][]string{{"telegram"}, nil} {
		if got := unsentIDs(t, a, chans, 0); !reflect.DeepEqual(got, []int64{late.ID}) {
			t.Fatalf("UnsentOutbox(%v) = %v after a reply committed during a list; want [%d]", chans, got, late.ID)
		}
	}
}

// One store lists while another commits replies on the same file (lazily, to commit
// often during a list), marking every other one sent. Whatever the interleaving, a list never moves the floor past a reply it did
// not see (the newest id is read before the scan, so a reply committed during it lies
// above), and at the end the lister's list is the table's.
func TestUnsentFloorWhileAnotherCommits(t *testing.T) {
	ctx := context.Background()
	a, path := openTest(t)
	b := openSecond(t, path)
	const replies = 1000
	done := make(chan error, 1)
	go func() {
		for i := range replies {
			to := core.Address{Channel: "telegram", Account: "a", Chat: "c"}
			out := []core.Outgoing{{Reply: core.Reply{To: to, Text: "r"}, CreatedAt: at(i)}}
			if _, err := b.Commit(ctx, core.Change{SessionID: to.SessionID(), Outbox: out, Lazy: true}); err != nil {
				done <- err
				return
			}
			if i%2 == 0 {
				if err := b.MarkSent(ctx, out[0].ID, "m", at(i)); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	lists := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			for _, chans := range [][]string{{"telegram"}, nil} {
				got, want := unsentIDs(t, a, chans, 0), idsOf(scanAll(t, a, chans, 0))
				if len(want) != replies/2 || !reflect.DeepEqual(got, want) {
					t.Fatalf("after %d lists during the commits: UnsentOutbox(%v) has %d rows, the table %d", lists, chans, len(got), len(want))
				}
			}
			return
		default:
		}
		unsentIDs(t, a, [][]string{{"telegram"}, nil}[lists%2], 0)
		lists++
	}
}
