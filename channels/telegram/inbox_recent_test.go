package telegram

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// listModel is the webhook inbox's recent ids as they were kept before recentSet: a list
// in arrival order and a set, the oldest evicted past recentIDs with the floor raised to
// it. The randomized test holds the inbox to it.
type listModel struct {
	pending map[int64]bool
	recent  []int64
	seen    map[int64]bool
	floor   int64
	next    int64
}

func newListModel() *listModel {
	return &listModel{pending: map[int64]bool{}, seen: map[int64]bool{}}
}

func (m *listModel) remember(id int64) {
	if m.seen[id] {
		return
	}
	m.recent = append(m.recent, id)
	m.seen[id] = true
	for len(m.recent) > recentIDs {
		old := m.recent[0]
		m.recent = m.recent[1:]
		delete(m.seen, old)
		m.floor = max(m.floor, old)
	}
}

func (m *listModel) receiveAny(id int64) bool {
	if m.pending[id] || m.seen[id] {
		return false
	}
	if id <= m.floor && m.floor-id < idResetGap {
		return false
	}
	m.remember(id)
	m.next = max(m.next, id+1)
	m.pending[id] = true
	return true
}

func (m *listModel) adopt(ids []int64) (taken []int64) {
	for _, id := range ids {
		if m.pending[id] || m.seen[id] {
			continue
		}
		m.remember(id)
		m.next = max(m.next, id+1)
		m.pending[id] = true
		taken = append(taken, id)
	}
	return taken
}

func (m *listModel) unreceive(id int64) {
	delete(m.pending, id)
	if m.seen[id] {
		delete(m.seen, id)
		m.recent = slices.DeleteFunc(m.recent, func(r int64) bool { return r == id })
	}
}

// list is the set's ids in arrival order, oldest first.
func (r *recentSet) list() []int64 {
	var ids []int64
	for _, run := range r.runs {
		for id := run.first; id < run.first+run.n; id++ {
			ids = append(ids, id)
		}
	}
	return ids
}

func rawUpdate(id int64) json.RawMessage {
	return json.RawMessage(`{"update_id":` + strconv.FormatInt(id, 10) + `}`)
}

// idSource makes Telegram-like webhook id sequences: mostly the next id, sometimes a gap,
// two neighbours swapped, a redelivery of an id seen lately, a restart far lower (the
// ids started over) or a little lower (below the floor: a very late redelivery).
type idSource struct {
	rng    *rand.Rand
	hi     int64   // the newest id Telegram made
	issued []int64 // the ids made lately, for redeliveries
	held   int64   // the lower of two swapped neighbours, still to come
}

func (s *idSource) next() int64 {
	if s.held != 0 {
		id := s.held
		s.held = 0
		return id
	}
	var id int64
	switch p := s.rng.IntN(100); {
	case p < 70:
		s.hi++
		id = s.hi
	case p < 78:
		s.hi += 2 + s.rng.Int64N(50)
		id = s.hi
	case p < 84:
		s.hi += 2
		s.held, id = s.hi-1, s.hi
	case p < 96 && len(s.issued) > 0:
		id = s.issued[len(s.issued)-1-s.rng.IntN(min(len(s.issued), 700))]
	case p < 98:
		s.hi = 1 + s.rng.Int64N(1000)
		id = s.hi
	default:
		s.hi = max(1, s.hi-1-s.rng.Int64N(idResetGap/2))
		id = s.hi
	}
	s.issued = append(s.issued, id)
	if len(s.issued) > 2000 {
		s.issued = slices.Clone(s.issued[1000:])
	}
	return id
}

// The recent webhook ids as runs answer and evict exactly as the list did, over thousands
// of random sequences of receptions, handled updates, failed saves (unreceive), adopted
// records and restarts (the record saved and loaded again).
func TestRecentRunsMatchTheList(t *testing.T) {
	sequences := 2000
	if testing.Short() {
		sequences = 200
	}
	ctx := context.Background()
	for seq := range sequences {
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		c, _ := testChannel(t)
		in, err := c.loadInbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := newListModel()
		src := &idSource{rng: rng, hi: 1 + rng.Int64N(1_000_000_000)}
		check := func(step int, what string) {
			t.Helper()
			if got := in.recent.list(); !slices.Equal(got, m.recent) || in.forgotten != m.floor || in.recent.size() != len(m.recent) || in.offset() != m.next {
				t.Fatalf("sequence %d step %d (%s): recent %v floor %d next %d, the list has %v floor %d next %d",
					seq, step, what, got, in.forgotten, in.offset(), m.recent, m.floor, m.next)
			}
		}
		steps := rng.IntN(1500)
		for step := range steps {
			id := src.next()
			if got, want := in.receiveAny(id, rawUpdate(id)), m.receiveAny(id); got != want {
				t.Fatalf("sequence %d step %d: receiveAny(%d) = %v, the list says %v", seq, step, id, got, want)
			}
			switch p := rng.IntN(1000); {
			case p < 800:
				in.done(id)
				delete(m.pending, id)
			case p < 830 && len(m.recent) > 0: // a failed save: mostly the newest id
				gone := m.recent[len(m.recent)-1]
				if rng.IntN(3) == 0 {
					gone = m.recent[rng.IntN(len(m.recent))]
				}
				in.unreceive([]int64{gone}, -1)
				m.unreceive(gone)
			case p < 840: // another replica's inbox, sharing some ids with this one
				var raws []json.RawMessage
				var ids []int64
				for range 1 + rng.IntN(4) {
					other := max(1, src.hi-rng.Int64N(600)+rng.Int64N(5))
					raws, ids = append(raws, rawUpdate(other)), append(ids, other)
				}
				saved, _ := json.Marshal(savedInbox{Pending: raws})
				_, got, err := in.adopt(string(saved))
				if want := m.adopt(ids); err != nil || !slices.Equal(got, want) {
					t.Fatalf("sequence %d step %d: adopt(%v) took %v, %v; the list takes %v", seq, step, ids, got, err, want)
				}
			case p < 850: // a restart
				if err := in.flush(ctx); err != nil {
					t.Fatal(err)
				}
				if in, err = c.loadInbox(ctx); err != nil {
					t.Fatal(err)
				}
				check(step, "reloaded")
			}
			if step%64 == 0 {
				check(step, "after receiveAny("+strconv.FormatInt(id, 10)+")")
			}
		}
		check(steps, "at the end")
	}
}

func TestRecentSetRemoveSplitsRuns(t *testing.T) {
	r := newRecentSet()
	for _, id := range []int64{10, 11, 12, 13, 14, 20, 21} {
		r.add(id)
	}
	for _, step := range []struct {
		remove int64
		want   []idRun
	}{
		{12, []idRun{{10, 2}, {13, 2}, {20, 2}}},
		{10, []idRun{{11, 1}, {13, 2}, {20, 2}}},
		{14, []idRun{{11, 1}, {13, 1}, {20, 2}}},
		{13, []idRun{{11, 1}, {20, 2}}},
		{99, []idRun{{11, 1}, {20, 2}}},
	} {
		r.remove(step.remove)
		if !slices.Equal(r.runs, step.want) || r.size() != len(r.list()) {
			t.Errorf("after removing %d: %v, want %v", step.remove, r.runs, step.want)
		}
		if r.has(step.remove) {
			t.Errorf("%d still held after its removal", step.remove)
		}
	}
	if r.size() != 3 || !r.has(11) || !r.has(21) {
		t.Errorf("size %d, runs %v: want 11, 20 and 21 held", r.size(), r.runs)
	}
}

func TestPackRunsRoundTrip(t *testing.T) {
	for _, runs := range [][]idRun{
		nil,
		{{1_000_001, 512}},
		{{500, 3}, {504, 1}, {503, 1}, {505, 2}},
		{{900_000_000, 10}, {17, 5}, {900_000_020, 1}},
	} {
		packed := packRuns(runs)
		ids, err := unpackRuns(packed)
		var want []int64
		for _, run := range runs {
			for id := run.first; id < run.first+run.n; id++ {
				want = append(want, id)
			}
		}
		if err != nil || !slices.Equal(ids, want) && len(want) > 0 {
			t.Errorf("runs %v packed as %v unpack to %v, %v", runs, packed, ids, err)
		}
	}
	if got := packRuns([]idRun{{500, 3}, {504, 1}, {503, 1}}); !slices.Equal(got, []int64{500, 3, 1, 1, -2, 1}) {
		t.Errorf("packed %v, want the later starts relative to the run before's end", got)
	}
}
