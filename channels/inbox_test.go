package channels

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/store"
)

// Add is AddAll for one event.
func (in *Inbox) Add(ctx context.Context, e InboxEntry) (added bool, err error) {
	got, err := in.AddAll(ctx, []InboxEntry{e})
	if err != nil {
		return false, err
	}
	return got[0], nil
}

// Len is how many entries wait.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.pending)
}

// flakyState is a State over the real store whose writes (fail) or reads (failRead) can
// be made to fail.
type flakyState struct {
	State
	fail, failRead bool
}

func (s *flakyState) ChannelState(ctx context.Context, ch, acc, key string) (string, bool, error) {
	if s.failRead {
		return "", false, errors.New("connection reset")
	}
	return s.State.ChannelState(ctx, ch, acc, key)
}

func (s *flakyState) SetChannelState(ctx context.Context, ch, acc, key, value string) error {
	if s.fail {
		return errors.New("disk full")
	}
	return s.State.SetChannelState(ctx, ch, acc, key, value)
}

func (s *flakyState) SetChannelStateLazy(ctx context.Context, ch, acc, key, value string) error {
	if s.fail {
		return errors.New("disk full")
	}
	return s.State.SetChannelStateLazy(ctx, ch, acc, key, value)
}

func (s *flakyState) SetChannelStateWith(ctx context.Context, ch, acc, key string, lazy bool, value func() (string, error)) error {
	if s.fail {
		return errors.New("disk full")
	}
	return s.State.SetChannelStateWith(ctx, ch, acc, key, lazy, value)
}

func TestInboxSurvivesAReopenInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	in, err := LoadInbox(ctx, st, "slack", "T1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c", "a", "b"} {
		if added, err := in.Add(ctx, InboxEntry{Key: k, Kind: "events_api", Data: json.RawMessage(`{"k":"` + k + `"}`)}); err != nil || !added {
			t.Fatalf("Add(%s) = %v, %v", k, added, err)
		}
	}
	if added, err := in.Add(ctx, InboxEntry{Key: "a"}); err != nil || added {
		t.Fatalf("a pending key was added again: %v, %v", added, err)
	}
	in.Done("a")
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	again, err := LoadInbox(ctx, st, "slack", "T1")
	if err != nil {
		t.Fatal(err)
	}
	got := again.Pending()
	if len(got) != 2 || got[0].Key != "c" || got[1].Key != "b" || string(got[1].Data) != `{"k":"b"}` {
		t.Fatalf("after a reopen: %+v, want c then b", got)
	}
	// Sequence numbers go on where they stopped, so new entries sort after the old.
	if _, err := again.Add(ctx, InboxEntry{Key: "d"}); err != nil {
		t.Fatal(err)
	}
	if p := again.Pending(); p[len(p)-1].Key != "d" {
		t.Errorf("a new entry sorts before replayed ones: %+v", p)
	}
	// Another account's inbox is separate.
	other, err := LoadInbox(ctx, st, "slack", "T2")
	if err != nil || other.Len() != 0 {
		t.Errorf("the inbox of another account holds %d, %v", other.Len(), err)
	}
}

func TestInboxAddThatCannotBeSavedRecordsNothing(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs := &flakyState{State: st, fail: true}
	in, err := LoadInbox(ctx, fs, "slack", "T1")
	if err != nil {
		t.Fatal(err)
	}
	if added, err := in.Add(ctx, InboxEntry{Key: "k"}); err == nil || added {
		t.Fatalf("Add on a failing store = %v, %v", added, err)
	}
	if in.Len() != 0 {
		t.Fatal("an entry that was not saved is pending")
	}
	fs.fail = false
	// The redelivery is stored now, not taken for a duplicate.
	if added, err := in.Add(ctx, InboxEntry{Key: "k"}); err != nil || !added {
		t.Fatalf("Add after the store recovered = %v, %v", added, err)
	}
}

// An inbox whose saved record could not be read at load (the store failed, not the
// record) never overwrites it: saves fail, so nothing new is acknowledged, until a read
// succeeds and merges the record's events in.
func TestInboxUnreadAtLoadIsNotOverwritten(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := LoadInbox(ctx, st, "discord", "B1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := first.Add(ctx, InboxEntry{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	saved := func() []string {
		t.Helper()
		s, _, err := LoadJSON[savedInbox](ctx, st, "discord", "B1", inboxKey)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range s.Pending {
			keys = append(keys, e.Key)
		}
		return keys
	}
	fs := &flakyState{State: st, failRead: true}
	in, err := LoadInbox(ctx, fs, "discord", "B1")
	if err == nil {
		t.Fatal("a load whose read failed reported no error")
	}
	if added, err := in.Add(ctx, InboxEntry{Key: "c"}); err == nil || added {
		t.Fatalf("Add while the record cannot be read = %v, %v; want an error (not acknowledged)", added, err)
	}
	in.Done("a")
	in.FlushSoon(ctx, 0, nil)
	if err := in.Flush(ctx); err == nil {
		t.Fatal("Flush while the record cannot be read succeeded")
	}
	if got := saved(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("the saved record was overwritten: %v, want [a b]", got)
	}
	fs.failRead = false
	if added, err := in.Add(ctx, InboxEntry{Key: "c"}); err != nil || !added {
		t.Fatalf("Add after the store recovered = %v, %v", added, err)
	}
	if got := saved(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("after the read back: saved %v, want [a b c]", got)
	}
}

// The record encode writes by hand is what json.Marshal writes for compact data, and
// decodes to the same entries when the data came with whitespace or characters Marshal
// escapes (the data goes in as it came).
func TestInboxRecordEncodesAsMarshal(t *testing.T) {
	for _, es := range [][]InboxEntry{
		nil,
		{{Key: "Ev1", Seq: 1, Kind: "events_api", Ref: "env-1", Data: json.RawMessage(`{"type":"event_callback","event":{"text":"a"}}`)}},
		{{Key: `k"\1`, Seq: 3}, {Key: "k2", Seq: 7, Ref: "<&>", Data: json.RawMessage(`[1,2]`)}, {Key: "k3", Seq: 9, Kind: "interactive", Data: json.RawMessage(`"s"`)}},
		{{Key: "k4", Seq: 12, Data: json.RawMessage(" {\n \"text\" : \"<b>&amp;</b>\" }\t")}},
	} {
		in := &Inbox{channel: "slack", pending: map[string]InboxEntry{}}
		for _, e := range es {
			in.pending[e.Key] = e
			in.seq = max(in.seq, e.Seq)
		}
		got, err := in.encode()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(savedInbox{Seq: in.seq, Pending: es})
		if err != nil {
			t.Fatal(err)
		}
		var a, b savedInbox
		if err := json.Unmarshal([]byte(got), &a); err != nil {
			t.Fatalf("%s does not decode: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if len(a.Pending) != len(b.Pending) || a.Seq != b.Seq {
			t.Fatalf("%s decodes to %+v, want %+v", got, a, b)
		}
		compact := true
		for i := range b.Pending {
			var x, y any
			if err := json.Unmarshal(a.Pending[i].Data, &x); len(a.Pending[i].Data) > 0 && err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(b.Pending[i].Data, &y)
			if !reflect.DeepEqual(x, y) {
				t.Errorf("entry %d's data decodes to %v, want %v", i, x, y)
			}
			compact = compact && string(es[i].Data) == string(b.Pending[i].Data)
			a.Pending[i].Data, b.Pending[i].Data = nil, nil
			if !reflect.DeepEqual(a.Pending[i], b.Pending[i]) {
				t.Errorf("entry %d decodes to %+v, want %+v", i, a.Pending[i], b.Pending[i])
			}
		}
		if compact && got != string(want) {
			t.Errorf("encoded\n%s\nwant\n%s", got, want)
		}
	}
}

// Data that is not JSON is refused at Add, before anything is saved: encode writes it into
// the record as it is.
func TestInboxRefusesDataThatIsNotJSON(t *testing.T) {
	in := &Inbox{channel: "slack", pending: map[string]InboxEntry{}}
	if _, err := in.Add(context.Background(), InboxEntry{Key: "k", Data: json.RawMessage(`{"a":`)}); err == nil {
		t.Fatal("data that is not JSON was added")
	}
	if in.Len() != 0 {
		t.Errorf("%d entries pending after a refused add", in.Len())
	}
}

// gatedState holds the first save until release, then fails it.
type gatedState struct {
	State
	entered, release chan struct{}
	once             sync.Once
}

func (s *gatedState) SetChannelStateWith(ctx context.Context, ch, acc, key string, lazy bool, value func() (string, error)) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.entered)
		<-s.release
		return errors.New("connection lost")
	}
	return s.State.SetChannelStateWith(ctx, ch, acc, key, lazy, value)
}

// A redelivery that comes while the first delivery's save is under way is not taken for a
// duplicate of an event that is saved: when that save fails, the redelivery records it.
func TestInboxRedeliveryDuringAFailingSave(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gs := &gatedState{State: st, entered: make(chan struct{}), release: make(chan struct{})}
	in, err := LoadInbox(ctx, gs, "slack", "T1")
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := in.Add(ctx, InboxEntry{Key: "k", Data: json.RawMessage(`{"n":1}`)})
		first <- err
	}()
	<-gs.entered
	type result struct {
		added bool
		err   error
	}
	second := make(chan result, 1)
	waiting := make(chan struct{})
	waitingForSave = func() { close(waiting) }
	defer func() { waitingForSave = func() {} }()
	go func() {
		added, err := in.Add(ctx, InboxEntry{Key: "k", Data: json.RawMessage(`{"n":1}`)})
		second <- result{added, err}
	}()
	select {
	case <-waiting:
	case r := <-second:
		t.Fatalf("the redelivery = %v, %v before the first delivery's save ended", r.added, r.err)
	}
	close(gs.release)
	if err := <-first; err == nil {
		t.Fatal("the first delivery's failed save was reported as saved")
	}
	if r := <-second; r.err != nil || !r.added {
		t.Fatalf("the redelivery = %v, %v: acknowledged as a duplicate of an event that was never saved", r.added, r.err)
	}
	v, ok, err := st.ChannelState(ctx, "slack", "T1", "inbox")
	if err != nil || !ok || !strings.Contains(v, `"key":"k"`) {
		t.Fatalf("the saved inbox after the redelivery: %q %v %v", v, ok, err)
	}
	if in.Len() != 1 {
		t.Fatalf("%d pending, want the redelivered event", in.Len())
	}
}
