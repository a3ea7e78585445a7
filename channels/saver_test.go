package channels

import (
	"context"
	"errors"
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
