package store

import (
	"context"
	"testing"
)

// A lazy channel state save is committed (seen at once, by another connection too) but
// not synced; the durable one is.
func TestSetChannelStateLazy(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	st0 := s.GroupStats()
	if err := s.SetChannelStateLazy(ctx, "telegram", "1", "updates", "lazy"); err != nil {
		t.Fatal(err)
	}
	if st := s.GroupStats(); st.Durable != st0.Durable || st.Writes != st0.Writes+1 {
		t.Errorf("a lazy save: %d durable of %d writes, want 0 of 1", st.Durable-st0.Durable, st.Writes-st0.Writes)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if v, ok, err := s2.ChannelState(ctx, "telegram", "1", "updates"); err != nil || !ok || v != "lazy" {
		t.Fatalf("another connection reads %q %v %v, want the lazy save", v, ok, err)
	}
	if err := s.SetChannelState(ctx, "telegram", "1", "updates", "durable"); err != nil {
		t.Fatal(err)
	}
	if st := s.GroupStats(); st.Durable != st0.Durable+1 {
		t.Errorf("a durable save was not synced: %d durable", st.Durable-st0.Durable)
	}
}
