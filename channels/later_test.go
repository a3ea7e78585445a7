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

// A request due sooner than the scheduled run brings it forward, once; one due later
// joins the run scheduled.
func TestLaterSoonerRequestBringsTheRunForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Later
		var runs atomic.Int32
		l.After(time.Hour, func() { runs.Add(1) })
		l.After(100*time.Millisecond, func() { runs.Add(1) })
		l.After(time.Hour, func() { runs.Add(1) }) // joins the run now due sooner
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("after the sooner delay: %d runs, want 1", n)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("the hour's request ran again (%d runs): it was brought forward, not added", n)
		}
		l.After(time.Hour, func() { runs.Add(1) }) // none scheduled: a run of its own
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("runs = %d, want 2", n)
		}
	})
}
