package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// testPages: the keyset reads the admin API pages with (SessionsAfter, EventsAfter,
// DroppedOutbox's before) walk the same order as the whole lists, page by page, filter
// before they count, and a row inserted between two pages neither shifts nor repeats
// what the next page holds.
func testPages(t *testing.T, open func() Store) {
	ctx := context.Background()
	s, other := open(), open()
	for i, id := range []string{"b", "a", "c", "d", "e"} {
		se := plainSession(id)
		se.UpdatedAt = at(i % 3) // b, d at 0; a, e at 1; c at 2: ties broken by id
		if id == "d" {
			se.Phase = core.PhaseOff
		}
		commit(t, s, core.Change{Session: &se})
	}
	sessionIDs := func(ss []core.Session) []string {
		var ids []string
		for _, se := range ss {
			ids = append(ids, se.ID)
		}
		return ids
	}
	walk := func(phase core.Phase, limit int, between func()) []string {
		t.Helper()
		var (
			ids     []string
			updated time.Time
			last    string
		)
		for range 10 {
			page, err := other.SessionsAfter(ctx, phase, updated, last, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("SessionsAfter(limit %d) = %d rows", limit, len(page))
			}
			if len(page) == 0 {
				return ids
			}
			ids = append(ids, sessionIDs(page)...)
			updated, last = page[len(page)-1].UpdatedAt, page[len(page)-1].ID
			if between != nil {
				between()
				between = nil
			}
		}
		t.Fatalf("SessionsAfter never ended: %v", ids)
		return nil
	}
	all, err := other.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sessionIDs(all), []string{"c", "a", "e", "b", "d"}; !slices.Equal(got, want) {
		t.Fatalf("Sessions = %v, want %v", got, want)
	}
	for _, limit := range []int{1, 2, 4} {
		if got := walk("", limit, nil); !slices.Equal(got, sessionIDs(all)) {
			t.Errorf("pages of %d = %v, want %v", limit, got, sessionIDs(all))
		}
	}
	if got := walk(core.PhasePlanning, 2, nil); !slices.Equal(got, []string{"c", "a", "e", "b"}) {
		t.Errorf("planning pages = %v, want d left out", got)
	}
	if got := walk(core.PhaseOff, 2, nil); !slices.Equal(got, []string{"d"}) {
		t.Errorf("off pages = %v, want [d]", got)
	}
	// A session that comes before the cursor (newer) is not on the later pages; one after it
	// (older, and a tie ordered after the cursor's id) is, once.
	inserted := func() {
		for _, n := range []struct {
			id string
			at int
		}{{"z", 5}, {"aa", 1}, {"0", -1}} {
			se := plainSession(n.id)
			se.UpdatedAt = at(n.at)
			commit(t, s, core.Change{Session: &se})
		}
	}
	if got, want := walk("", 2, inserted), []string{"c", "a", "aa", "e", "b", "d", "0"}; !slices.Equal(got, want) {
		t.Errorf("pages with inserts after the first = %v, want %v", got, want)
	}

	// Events: oldest first, after an id.
	var evs []core.Event
	for i := range 5 {
		evs = append(evs, core.Event{Kind: core.EventProposed, Actor: core.AgentActor, At: at(i)})
	}
	commit(t, s, core.Change{SessionID: "a", Events: evs})
	commit(t, s, core.Change{SessionID: "b", Events: evs[:1]})
	whole, err := other.Events(ctx, "a")
	if err != nil || len(whole) != 5 {
		t.Fatalf("Events(a) = %+v, %v", whole, err)
	}
	first, err := other.EventsAfter(ctx, "a", 0, 2)
	if err != nil || len(first) != 2 || first[0].ID != whole[0].ID || first[1].ID != whole[1].ID {
		t.Fatalf("EventsAfter(0, 2) = %+v, %v", first, err)
	}
	commit(t, s, core.Change{SessionID: "a", Events: evs[:1]}) // a sixth, after the cursor
	rest, err := other.EventsAfter(ctx, "a", first[1].ID, 0)
	if err != nil || len(rest) != 4 || rest[0].ID != whole[2].ID || rest[3].SessionID != "a" || rest[3].ID <= whole[4].ID {
		t.Fatalf("EventsAfter(%d) = %+v, %v; want events 3 to 6 of a", first[1].ID, rest, err)
	}

	// Dropped replies: newest first, below an id.
	out := make([]core.Outgoing, 4)
	for i := range out {
		out[i] = core.Outgoing{Reply: core.Reply{To: all[0].Address, Text: "r"}, CreatedAt: at(i)}
	}
	commit(t, s, core.Change{SessionID: "a", Outbox: out})
	for _, o := range out[1:] {
		if err := s.DropOutbox(ctx, o.ID, "refused"); err != nil {
			t.Fatal(err)
		}
	}
	page, err := other.DroppedOutbox(ctx, 0, 2)
	if err != nil || len(page) != 2 || page[0].ID != out[3].ID || page[1].ID != out[2].ID {
		t.Fatalf("DroppedOutbox(0, 2) = %+v, %v", page, err)
	}
	page, err = other.DroppedOutbox(ctx, out[2].ID, 2)
	if err != nil || len(page) != 1 || page[0].ID != out[1].ID {
		t.Fatalf("DroppedOutbox(%d, 2) = %+v, %v; want the oldest drop only", out[2].ID, page, err)
	}
}

// testWaitingSessions: WaitingSessions lists exactly the sessions awaiting approval or
// with a question asked, most recently updated first, and a session leaves the list when
// it stops waiting.
func testWaitingSessions(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	var asking core.Session
	for i, id := range []string{"planning", "waits", "asks", "off", "waits-later"} {
		se := plainSession(id)
		se.UpdatedAt = at(i)
		switch id {
		case "waits", "waits-later":
			se.Phase = core.PhaseAwaitingApproval
		case "asks":
			se.Question = &core.Question{ID: "q1", Text: "Which file?", AskedAt: at(i)}
		case "off":
			se.Phase = core.PhaseOff
		}
		stored := commit(t, s, core.Change{Session: &se})
		if id == "asks" {
			asking = stored
		}
	}
	ids := func() []string {
		t.Helper()
		ss, err := s.WaitingSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, se := range ss {
			out = append(out, se.ID)
		}
		return out
	}
	if got, want := ids(), []string{"waits-later", "asks", "waits"}; !slices.Equal(got, want) {
		t.Fatalf("WaitingSessions = %v, want %v", got, want)
	}
	answered := asking
	answered.Question, answered.UpdatedAt = nil, at(9)
	commit(t, s, core.Change{Session: &answered})
	if got, want := ids(), []string{"waits-later", "waits"}; !slices.Equal(got, want) {
		t.Fatalf("after the answer, WaitingSessions = %v, want %v", got, want)
	}
}
