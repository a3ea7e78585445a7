package channels

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestSaverWritesOnlyChanges(t *testing.T) {
	var s Saver
	writes := 0
	write := func(context.Context) error { writes++; return nil }
	ctx := context.Background()
	if err := s.Save(ctx, write); err != nil || writes != 0 {
		t.Fatalf("unchanged: err %v, %d writes, want none", err, writes)
	}
	s.Changed()
	s.Changed()
	if err := s.Save(ctx, write); err != nil || writes != 1 {
		t.Fatalf("after changes: err %v, %d writes, want 1", err, writes)
	}
	if err := s.Save(ctx, write); err != nil || writes != 1 {
		t.Fatalf("saved already: err %v, %d writes, want still 1", err, writes)
	}
	s.Changed()
	boom := errors.New("disk full")
	if err := s.Save(ctx, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: err %v, want %v", err, boom)
	}
	if err := s.Save(ctx, write); err != nil || writes != 2 {
		t.Fatalf("after a failed save: err %v, %d writes, want a retry (2)", err, writes)
	}
}

// A lazy save (SaveSoon) is enough for finished events only: a change that must be
// durable and was written lazily is written again by Save; finished events written
// lazily are not.
func TestSaverLazySaveKeepsDurableChangesDurable(t *testing.T) {
	var s Saver
	durable, lazy := 0, 0
	write := func(context.Context) error { durable++; return nil }
	writeLazy := func(context.Context) error { lazy++; return nil }
	ctx := context.Background()

	s.Changed() // an event received
	if err := s.saveLazy(ctx, writeLazy); err != nil || lazy != 1 {
		t.Fatalf("lazy save: err %v, %d lazy writes, want 1", err, lazy)
	}
	if err := s.Save(ctx, write); err != nil || durable != 1 {
		t.Fatalf("a received event saved only lazily: Save made %d durable writes, want 1 (err %v)", durable, err)
	}
	if err := s.Save(ctx, write); err != nil || durable != 1 {
		t.Fatalf("saved already: %d durable writes, want still 1 (err %v)", durable, err)
	}

	s.Finished() // the event handled
	if err := s.saveLazy(ctx, writeLazy); err != nil || lazy != 2 {
		t.Fatalf("lazy save of a finished event: err %v, %d lazy writes, want 2", err, lazy)
	}
	if err := s.Save(ctx, write); err != nil || durable != 1 {
		t.Fatalf("a finished event written lazily was written again durably (%d), want not (err %v)", durable, err)
	}
	if err := s.saveLazy(ctx, writeLazy); err != nil || lazy != 2 {
		t.Fatalf("nothing changed: %d lazy writes, want still 2 (err %v)", lazy, err)
	}

	m := map[string]int{"a": 1}
	Delete(&s, m, "a")
	if err := s.Save(ctx, write); err != nil || durable != 2 {
		t.Fatalf("Save after a removal: %d durable writes, want 2: Save still writes what changed (err %v)", durable, err)
	}
}

// A Save whose changes an earlier save already made durable returns without writing,
// though newer changes arrived since (they are their own Save's): under a steady stream
// of changes each waiting caller wrote the whole record again in turn.
func TestSaverSkipsChangesSavedMeanwhile(t *testing.T) {
	var s Saver
	writes := 0
	write := func(context.Context) error { writes++; return nil }
	ctx := context.Background()
	s.Changed() // caller A's change
	v, m := s.version.Load(), s.must.Load()
	s.Changed() // caller B's change
	if err := s.Save(ctx, write); err != nil || writes != 1 {
		t.Fatalf("B's save: err %v, %d writes, want 1", err, writes)
	}
	s.Changed() // caller C's change, after B's save
	if err := s.saveFrom(ctx, v, m, write); err != nil || writes != 1 {
		t.Fatalf("A's save after B's held A's change: err %v, %d writes, want still 1", err, writes)
	}
	if err := s.Save(ctx, write); err != nil || writes != 2 {
		t.Fatalf("C's save: err %v, %d writes, want 2", err, writes)
	}
}

// Saves while one is in flight wait for it: one whose changes it held returns without
// writing, one with a newer change writes after it, never beside it; a save that
// panicked leaves the next one free to run.
func TestSaverWaitersShareTheSaveInFlight(t *testing.T) {
	var s Saver
	ctx := context.Background()
	var writes, inFlight atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	write := func(context.Context) error {
		if inFlight.Add(1) != 1 {
			t.Error("two saves ran at once")
		}
		defer inFlight.Add(-1)
		if writes.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	}
	s.Changed()
	s.Changed()
	first := make(chan error, 1)
	go func() { first <- s.Save(ctx, write) }()
	<-started
	held := make(chan error, 1)
	go func() { held <- s.Save(ctx, write) }() // its changes are in the snapshot in flight
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil || writes.Load() != 1 {
		t.Fatalf("a save whose changes the one in flight held: err %v, %d writes, want 1", err, writes.Load())
	}
	s.Changed()
	if err := s.Save(ctx, write); err != nil || writes.Load() != 2 {
		t.Fatalf("a newer change: err %v, %d writes, want 2", err, writes.Load())
	}

	s.Changed()
	func() {
		defer func() { _ = recover() }()
		_ = s.Save(ctx, func(context.Context) error { panic("boom") })
	}()
	if err := s.Save(ctx, write); err != nil || writes.Load() != 3 {
		t.Fatalf("after a save panicked: err %v, %d writes, want 3 (the change was not saved)", err, writes.Load())
	}
}

// snapState is a SnapshotState that notes each save; merge makes the next save act as
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

// Through a SnapshotState the Saver keeps Save's rules: nothing written twice, a save
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
