package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/store"
)

// A record saved before the runs (recent as a list of ids) loads into the same recent
// ids, floor, offset and pending update on SQLite; the next save writes only
// recent_runs, a fraction of the size, and loads back to what the list model holds.
func TestOldInboxRecordLoadsAndSavesAsRuns(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, logs := testChannel(t)
	c.st = st

	// What the list kept after 700 deliveries: in order, two neighbours swapped, a gap,
	// a redelivery, and more than recentIDs of them, so that the floor has risen.
	const base = 712_345_000
	m := newListModel()
	for i := int64(1); i <= 700; i++ {
		id := base + i
		switch i {
		case 300:
			id = base + 301
		case 301:
			id = base + 300
		case 400:
			id = base + 450
		}
		m.receiveAny(id)
		m.receiveAny(base + 5) // redelivered: refused
		delete(m.pending, id)
	}
	pendingID := int64(base + 701)
	m.receiveAny(pendingID)
	old, err := json.Marshal(savedInbox{Handled: pendingID - 1, Next: m.next, Pending: []json.RawMessage{rawUpdate(pendingID)}, Recent: m.recent, Forgotten: m.floor})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.recent) != recentIDs || m.floor <= base || !strings.Contains(string(old), `"recent":[`) {
		t.Fatalf("the old record is not what the list kept: %d ids, floor %d", len(m.recent), m.floor)
	}
	if err := st.SetChannelState(ctx, Name, c.account, inboxKey, string(old)); err != nil {
		t.Fatal(err)
	}

	in, err := c.loadInbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.recent.list(); !slices.Equal(got, m.recent) || in.forgotten != m.floor || in.offset() != m.next {
		t.Fatalf("loaded recent %v floor %d offset %d, want %v floor %d offset %d", got, in.forgotten, in.offset(), m.recent, m.floor, m.next)
	}
	if got := in.replay(); len(got) != 1 || string(got[0]) != string(rawUpdate(pendingID)) {
		t.Errorf("replay %s, want update %d", got, pendingID)
	}

	// One more update evicts the oldest id; the save is in the new form only.
	next := int64(base + 702)
	if !in.receiveAny(next, rawUpdate(next)) || !m.receiveAny(next) {
		t.Fatal("a new update was refused")
	}
	if err := in.flush(ctx); err != nil {
		t.Fatal(err)
	}
	saved, _, err := st.ChannelState(ctx, Name, c.account, inboxKey)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(saved, `"recent":`) || !strings.Contains(saved, `"recent_runs":[`) || len(saved) > len(old)/4 {
		t.Errorf("saved %d bytes (the old record %d): %s; want recent_runs only, a quarter of the size at most", len(saved), len(old), saved)
	}

	again, err := c.loadInbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.recent.list(); !slices.Equal(got, m.recent) || again.forgotten != m.floor || again.offset() != m.next {
		t.Fatalf("reloaded recent %v floor %d offset %d, want %v floor %d offset %d", got, again.forgotten, again.offset(), m.recent, m.floor, m.next)
	}
	if len(again.replay()) != 2 {
		t.Errorf("replay %s, want the two pending updates", again.replay())
	}
	for _, id := range []int64{m.floor, m.recent[0], next, base + 450} {
		if again.receiveAny(id, rawUpdate(id)) {
			t.Errorf("update %d (at the floor, remembered or pending) was taken again", id)
		}
	}
	if !again.receiveAny(base+400, rawUpdate(base+400)) {
		t.Errorf("update %d, above the floor and never delivered, was refused", base+400)
	}
	if strings.Contains(logs.String(), "unreadable") {
		t.Errorf("a readable record was logged as unreadable:\n%s", logs)
	}
}

// A record whose recent_runs packRuns could not have written is refused as an
// unreadable record is (logged, polling starts over, nothing replayed), without a panic;
// adopting it still takes its pending updates, since adopt never reads the recent ids.
func TestMalformedRecentRunsAreRefused(t *testing.T) {
	ctx := context.Background()
	for name, runs := range map[string]string{
		"odd length":         `[5,3,1]`,
		"zero count":         `[5,0]`,
		"negative count":     `[5,-3]`,
		"huge count":         `[5,4611686018427387904]`,
		"too many in all":    `[5,300,10,300]`,
		"overlapping":        `[10,5,-3,2]`,
		"overlapping later":  `[10,5,5,1,-12,2]`,
		"end past int64":     `[9223372036854775807,2]`,
		"start past int64":   `[10,1,9223372036854775807,1]`,
		"start before int64": `[-9223372036854775807,1,-5,1]`,
	} {
		t.Run(name, func(t *testing.T) {
			var packed []int64
			if err := json.Unmarshal([]byte(runs), &packed); err != nil {
				t.Fatal(err)
			}
			if ids, err := unpackRuns(packed); !errors.Is(err, errBadRuns) {
				t.Errorf("unpackRuns(%s) = %v, %v; want errBadRuns", runs, ids, err)
			}
			record := `{"handled":40,"next":42,"pending":[{"update_id":41}],"recent_runs":` + runs + `,"floor":3}`
			refusedAtLoad(t, record)
			c, _ := testChannel(t)
			in, err := c.loadInbox(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if raws, ids, err := in.adopt(record); err != nil || len(raws) != 1 || !slices.Equal(ids, []int64{41}) {
				t.Errorf("adopt = %s, %v, %v; want update 41", raws, ids, err)
			}
		})
	}
	for name, record := range map[string]string{
		"both forms":        `{"next":42,"pending":[{"update_id":41}],"recent":[1,2],"recent_runs":[1,2]}`,
		"not numbers":       `{"next":42,"pending":[{"update_id":41}],"recent_runs":"1,2"}`,
		"past int64 digits": `{"next":42,"pending":[{"update_id":41}],"recent_runs":[1e30,1]}`,
	} {
		t.Run(name, func(t *testing.T) { refusedAtLoad(t, record) })
	}
}

// refusedAtLoad checks that loading record logs it as unreadable and starts afresh.
func refusedAtLoad(t *testing.T, record string) {
	t.Helper()
	ctx := context.Background()
	c, logs := testChannel(t)
	if err := c.st.SetChannelState(ctx, Name, c.account, inboxKey, record); err != nil {
		t.Fatal(err)
	}
	in, err := c.loadInbox(ctx)
	if err != nil || in.offset() != 0 || len(in.replay()) != 0 || in.recent.size() != 0 || in.forgotten != 0 {
		t.Errorf("loading %s: %v, offset %d, %d replayed, %d recent, floor %d; want a fresh inbox", record, err, in.offset(), len(in.replay()), in.recent.size(), in.forgotten)
	}
	if !strings.Contains(logs.String(), "unreadable") {
		t.Errorf("loading %s logged nothing about it: %q", record, logs)
	}
}

// The record encode writes by hand decodes to what json.Marshal's would, with pending
// updates spliced in as they came (whitespace, characters Marshal escapes, the old recent
// form), and is itself what json.Marshal writes once the pending updates are compact.
func TestInboxRecordEncodesAsMarshal(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, s := range []savedInbox{
		{Handled: 0, Next: 1},
		{Handled: 41, Next: 50, Forgotten: 7},
		{Handled: 712_345_000, Next: 712_345_003, Pending: []json.RawMessage{raw(`{"update_id":712345001,"message":{"text":"<b>&</b> \u00e9"}}`), raw(" {\n \"update_id\" : 712345002 }\t")}, RecentRuns: []int64{712_345_001, 2, 5, 1}, Forgotten: 712_000_000},
		{Handled: -1, Next: 3, Recent: []int64{1, 2}, RecentRuns: []int64{1, 2}},
		{Handled: 9, Next: 10, Pending: []json.RawMessage{raw(`{"update_id":10}`)}},
	} {
		got := s.appendJSON(nil)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var a, b savedInbox
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s does not decode: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if len(a.Pending) != len(b.Pending) {
			t.Fatalf("%s has %d pending updates, want %d", got, len(a.Pending), len(b.Pending))
		}
		for i := range b.Pending { // Marshal compacted them; the decoded values must agree
			var x, y any
			if err := json.Unmarshal(a.Pending[i], &x); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b.Pending[i], &y); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(x, y) {
				t.Errorf("pending %d decodes to %v, want %v", i, x, y)
			}
		}
		a.Pending, b.Pending = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s decodes to %+v, want %+v", got, a, b)
		}
		compact := s
		compact.Pending = nil
		for _, p := range s.Pending {
			var buf bytes.Buffer
			if err := json.Compact(&buf, p); err != nil {
				t.Fatal(err)
			}
			compact.Pending = append(compact.Pending, bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(buf.Bytes(), []byte("<"), []byte(`\u003c`)), []byte(">"), []byte(`\u003e`)), []byte("&"), []byte(`\u0026`)))
		}
		if got := string(compact.appendJSON(nil)); got != string(want) {
			t.Errorf("encoded\n%s\nwant\n%s", got, want)
		}
	}
}
