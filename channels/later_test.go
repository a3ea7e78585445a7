package channels

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestLaterCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Later
		var runs atomic.Int32
		for range 5 {
			l.After(100*time.Millisecond, func() { runs.Add(1) })
		}
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("five requests in one delay ran %d times, want once", n)
		}
		l.After(100*time.Millisecond, func() { runs.Add(1) }) // a later request runs again
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("runs = %d, want 2", n)
		}
	})
}
