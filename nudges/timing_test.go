package nudges

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// walk is the obvious catch-up: step through every occurrence. catchUp must agree with it.
func walk(sched cron.Schedule, due, now time.Time) (occ, next time.Time) {
	occ, next = due, nextAfter(sched, due)
	for !next.IsZero() && !next.After(now) {
		occ, next = next, nextAfter(sched, next)
	}
	return occ, next
}

func TestCatchUp(t *testing.T) {
	p := newParser()
	base := time.Date(2025, 3, 28, 23, 59, 0, 0, time.UTC) // just before the EU DST change
	tests := []struct {
		spec string
		due  time.Time
		gaps []time.Duration
	}{
		{"@every 10m0s", base, []time.Duration{0, time.Minute, 10 * time.Minute, 25 * time.Hour, 400 * 24 * time.Hour}},
		{"@every 1s", base.Add(123456789), []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, 365 * 24 * time.Hour}},
		{"* * * * *", base, []time.Duration{0, 30 * time.Second, time.Hour, 40 * 24 * time.Hour}},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", time.Date(2025, 3, 28, 1, 30, 0, 0, time.UTC), []time.Duration{0, 24 * time.Hour, 80 * time.Hour, 200 * 24 * time.Hour}},
		{"CRON_TZ=America/New_York 0 9 * * 1-5", time.Date(2025, 3, 7, 14, 0, 0, 0, time.UTC), []time.Duration{0, 72 * time.Hour, 90 * 24 * time.Hour}},
		{"0 0 29 2 *", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), []time.Duration{0, 3 * 365 * 24 * time.Hour, 9 * 365 * 24 * time.Hour}},
		{"@weekly", time.Date(2025, 3, 30, 0, 0, 0, 0, time.UTC), []time.Duration{time.Hour, 15 * 24 * time.Hour, 1000 * 24 * time.Hour}},
	}
	for _, tc := range tests {
		sched, err := p.Parse(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		for _, gap := range tc.gaps {
			t.Run(tc.spec+"/"+gap.String(), func(t *testing.T) {
				now := tc.due.Add(gap)
				occ, next := catchUp(sched, tc.due, now)
				wantOcc, wantNext := walk(sched, tc.due, now)
				if !occ.Equal(wantOcc) || !next.Equal(wantNext) {
					t.Errorf("catchUp = %s, %s; want %s, %s", occ, next, wantOcc, wantNext)
				}
				if occ.After(now) || !next.After(now) || occ.Before(tc.due) {
					t.Errorf("catchUp = %s, %s around now %s: the occurrence must be due and the next one in the future", occ, next, now)
				}
			})
		}
	}
}

func TestCatchUpOneShot(t *testing.T) {
	due := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	occ, next := catchUp(nil, due, due.Add(time.Hour))
	if !occ.Equal(due) || !next.IsZero() {
		t.Errorf("catchUp(one-shot) = %s, %s; want the due time and no next", occ, next)
	}
}

// BenchmarkCatchUpFarBehind is the worst case the windowed search exists for: a
// once-a-minute schedule that was down for a year.
func BenchmarkCatchUpFarBehind(b *testing.B) {
	sched, err := newParser().Parse("* * * * *")
	if err != nil {
		b.Fatal(err)
	}
	due := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	now := due.Add(365 * 24 * time.Hour)
	for b.Loop() {
		catchUp(sched, due, now)
	}
}
