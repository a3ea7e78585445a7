package store

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLeaseCycle is a turn's lease bookkeeping on its own: take the lease, release
// it, both lazy transactions of one statement. What it costs is the fixed price of a
// transaction on the single writer (queue, BEGIN, COMMIT at synchronous=NORMAL), which
// a spaced message pays for each of its transactions.
func BenchmarkLeaseCycle(b *testing.B) {
	ctx := context.Background()
	s, _ := openTest(b)
	now := time.Now()
	for b.Loop() {
		if _, ok, err := s.AcquireLease(ctx, "session:bench", "me", now, time.Minute); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := s.ReleaseLease(ctx, "session:bench", "me"); err != nil {
			b.Fatal(err)
		}
	}
}
