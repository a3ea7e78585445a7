package engine

import (
	"testing"
	"time"
)

// The retry timing is a share of outbox_max_age, bounded by the timing a day's age has: a
// small age still gets several attempts, and the longest hold is half the age.
func TestPaceSharesTheAge(t *testing.T) {
	for _, tc := range []struct {
		age  time.Duration
		want pacing
	}{
		{0, pacing{30 * time.Second, 10 * time.Minute, 15 * time.Second}},
		{24 * time.Hour, pacing{30 * time.Second, 10 * time.Minute, 15 * time.Second}},
		{2 * time.Minute, pacing{30 * time.Second, time.Minute, 15 * time.Second}},
		{2 * time.Second, pacing{500 * time.Millisecond, time.Second, 250 * time.Millisecond}},
		{time.Millisecond, pacing{retryFloor, retryFloor, retryFloor}},
	} {
		if got := pace(tc.age); got != tc.want {
			t.Errorf("pace(%v) = %+v, want %+v", tc.age, got, tc.want)
		}
	}
	p := pace(2 * time.Second)
	for fails, want := range []time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: time.Second, 9: time.Second} {
		if want != 0 && p.delay(fails) != want {
			t.Errorf("delay after %d failures = %v, want %v", fails, p.delay(fails), want)
		}
	}
}
