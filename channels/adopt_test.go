package channels

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/plangate/plangate/store"
)

// keyState puts an Inbox's record under another key, as each replica's inbox is kept.
type keyState struct {
	State
	key string
}

func (s keyState) ChannelState(ctx context.Context, ch, acc, key string) (string, bool, error) {
	return s.State.ChannelState(ctx, ch, acc, s.key)
}

func (s keyState) SetChannelState(ctx context.Context, ch, acc, key, value string) error {
	return s.State.SetChannelState(ctx, ch, acc, s.key, value)
}

func (s keyState) SetChannelStateLazy(ctx context.Context, ch, acc, key, value string) error {
	return s.State.SetChannelStateLazy(ctx, ch, acc, s.key, value)
}

func (s keyState) SetChannelStateWith(ctx context.Context, ch, acc, key string, lazy bool, value func() (string, error)) error {
	return s.State.SetChannelStateWith(ctx, ch, acc, s.key, lazy, value)
}

// Adopt takes the pending entries of another inbox's record into this one, durably, in
// their order there and after the entries waiting here; a key pending here already is not
// taken twice, and a record that does not decode changes nothing.
func TestInboxAdoptMergesAnotherRecord(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dead, _ := LoadInbox(ctx, keyState{st, "inbox@dead"}, "slack", "T1")
	for _, k := range []string{"z", "shared", "y"} {
		if _, err := dead.Add(ctx, InboxEntry{Key: k, Kind: "events_api", Data: json.RawMessage(`{"k":"` + k + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	saved, ok, err := st.ChannelState(ctx, "slack", "T1", "inbox@dead")
	if err != nil || !ok {
		t.Fatalf("the dead inbox's record: %v %v", ok, err)
	}
	mine := keyState{st, "inbox@me"}
	in, _ := LoadInbox(ctx, mine, "slack", "T1")
	for _, k := range []string{"a", "shared"} {
		if _, err := in.Add(ctx, InboxEntry{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Adopt(ctx, "{not json"); !errors.Is(err, ErrUnreadable) || in.Len() != 2 {
		t.Fatalf("a damaged record: err %v, %d pending, want an error and nothing changed", err, in.Len())
	}
	got, err := in.Adopt(ctx, saved)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "z" || got[1].Key != "y" || string(got[1].Data) != `{"k":"y"}` || got[0].Kind != "events_api" {
		t.Fatalf("adopted %+v, want z then y (shared was pending here)", got)
	}
	// Saved before Adopt returned: a fresh load (a crash now) has all of them, in order.
	again, err := LoadInbox(ctx, mine, "slack", "T1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range again.Pending() {
		keys = append(keys, e.Key)
	}
	if want := []string{"a", "shared", "z", "y"}; !slices.Equal(keys, want) {
		t.Errorf("the saved inbox after adopting holds %v, want %v", keys, want)
	}
	// Adopting the same record again (a crash before its deletion) adds nothing.
	if got, err := in.Adopt(ctx, saved); err != nil || len(got) != 0 {
		t.Errorf("adopting again gave %+v, %v; want nothing new", got, err)
	}
}
