package channels

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// snapState is a State that notes each snapshot save; merge makes the next save act as
// one merged into another's (its value is never asked for).
type snapState struct {
	memState
	calls []bool // lazy, per value computed
	merge bool
	fail  error
}

func (s *snapState) SetChannelStateWith(ctx context.Context, ch, acct, key string, lazy bool, value func() (string, error)) error {
	if s.fail != nil {
		return s.fail
	}
	if s.merge {
		s.merge = false
		return nil
	}
	v, err := value()
	if err != nil {
		return err
	}
	s.calls = append(s.calls, lazy)
	return s.SetChannelState(ctx, ch, acct, key, v)
}

// The Saver saves through the store's snapshot save and keeps its rules: nothing written twice, a save
// merged into another counts as done, a change that must be durable and was saved lazily
// is saved again durably, a failed save is retried.
func TestSaverSavesRecordsThroughTheStore(t *testing.T) {
	st := &snapState{memState: memState{m: map[string]string{}}}
	var s Saver
	n := 0
	r := Record{St: st, Channel: "c", Account: "a", Key: "k", Encode: func() (string, error) { n++; return fmt.Sprint(n), nil }}
	ctx := context.Background()
	s.Changed()
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 1 || st.calls[0] {
		t.Fatalf("first save: err %v, saves %v, want one durable", err, st.calls)
	}
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 1 {
		t.Fatalf("nothing changed: err %v, saves %v, want still one", err, st.calls)
	}
	s.Changed()
	st.merge = true
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 1 {
		t.Fatalf("a save merged into another: err %v, saves %v, want still one", err, st.calls)
	}
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 1 {
		t.Fatalf("after a merged save: err %v, saves %v, want still one (it was done)", err, st.calls)
	}
	s.Changed()
	if err := s.saveRecordLazy(ctx, r); err != nil || len(st.calls) != 2 || !st.calls[1] {
		t.Fatalf("lazy save: err %v, saves %v, want a lazy second", err, st.calls)
	}
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 3 || st.calls[2] {
		t.Fatalf("a received event saved only lazily: err %v, saves %v, want a durable third", err, st.calls)
	}
	s.Changed()
	boom := errors.New("disk full")
	st.fail = boom
	if err := s.SaveRecord(ctx, r); !errors.Is(err, boom) {
		t.Fatalf("failed save: err %v, want %v", err, boom)
	}
	st.fail = nil
	if err := s.SaveRecord(ctx, r); err != nil || len(st.calls) != 4 {
		t.Fatalf("after a failed save: err %v, saves %v, want a retry", err, st.calls)
	}
	if v, _, _ := st.ChannelState(ctx, "c", "a", "k"); v != fmt.Sprint(n) {
		t.Fatalf("stored %q, want the newest snapshot %d", v, n)
	}
}

// memState is a State in memory.
type memState struct{ m map[string]string }

func (s *memState) ChannelState(_ context.Context, ch, acct, key string) (string, bool, error) {
	v, ok := s.m[ch+"/"+acct+"/"+key]
	return v, ok, nil
}

func (s *memState) SetChannelState(_ context.Context, ch, acct, key, v string) error {
	s.m[ch+"/"+acct+"/"+key] = v
	return nil
}

func (s *memState) SetChannelStateLazy(ctx context.Context, ch, acct, key, v string) error {
	return s.SetChannelState(ctx, ch, acct, key, v)
}
