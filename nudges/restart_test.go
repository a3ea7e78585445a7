package nudges_test

import (
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// TestRestartGraceAndMissed: schedule, stop, let time pass one nudge by less than the grace
// period and another by more, start again: the first is delivered, the second reported
// missed, and a second restart delivers nothing twice.
func TestRestartGraceAndMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute), remindAt(t0, 30*time.Minute), remindAt(t0, time.Hour))
		cfg := nudges.Config{Grace: 15 * time.Minute}

		d1 := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d1, cfg, testLogger(t)))
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		if got := d1.delivered(); len(got) != 0 {
			t.Fatalf("first run delivered %v", describe(got, t0))
		}

		// Down until +40m: the 10m nudge is 30 min late (missed), the 30m one 10 min (fires).
		time.Sleep(39 * time.Minute)
		d2 := &fakeDeliverer{}
		stop = start(t, nudges.New(st, d2, cfg, testLogger(t)))
		synctest.Wait()
		stop()
		if got, want := describe(d2.delivered(), t0), []string{idAt(ns[1], "30m0s") + " (delivered +10m0s)"}; !reflect.DeepEqual(got, want) {
			t.Errorf("after the restart delivered %v, want %v", got, want)
		}
		wantReport := []missedReport{{session: "s1", ids: []int64{ns[0].ID}, times: []time.Time{ns[0].NextFireAt}, at: t0.Add(40 * time.Minute)}}
		if got := d2.reports(); !reflect.DeepEqual(got, wantReport) {
			t.Errorf("missed reports %+v, want %+v", got, wantReport)
		}

		// A second restart at once: nothing is delivered or reported again; the 60m nudge
		// still comes on time.
		d3 := &fakeDeliverer{}
		stop = start(t, nudges.New(st, d3, cfg, testLogger(t)))
		synctest.Wait()
		if got := d3.delivered(); len(got) != 0 || len(d3.reports()) != 0 {
			t.Errorf("second restart delivered %v, reported %v", describe(got, t0), d3.reports())
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		if got, want := describe(d3.delivered(), t0), []string{idAt(ns[2], "1h0m0s")}; !reflect.DeepEqual(got, want) {
			t.Errorf("then delivered %v, want %v", got, want)
		}

		wantCounts := []struct{ fired, missed int }{{0, 1}, {1, 0}, {1, 0}}
		for i, n := range ns {
			got := nudgeByID(t, st, n.ID)
			if got.Status != core.NudgeDone || got.Fired != wantCounts[i].fired || got.Missed != wantCounts[i].missed {
				t.Errorf("nudge %d: status %s fired %d missed %d, want done %d %d", i, got.Status, got.Fired, got.Missed,
					wantCounts[i].fired, wantCounts[i].missed)
			}
		}
		ledger, err := st.NudgeFirings(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, f := range ledger {
			outcomes = append(outcomes, fmt.Sprintf("%d:%s", f.NudgeID, f.Outcome))
		}
		if want := []string{fmt.Sprintf("%d:missed", ns[0].ID), fmt.Sprintf("%d:fired", ns[1].ID), fmt.Sprintf("%d:fired", ns[2].ID)}; !reflect.DeepEqual(outcomes, want) {
			t.Errorf("ledger %v, want %v", outcomes, want)
		}
	})
}

// TestRestartRecurringNoBurst: a recurring schedule down for many occurrences catches up
// with its latest one only, delivered or missed depending on the grace period, and then
// keeps its rhythm.
func TestRestartRecurringNoBurst(t *testing.T) {
	tests := []struct {
		name        string
		grace       time.Duration
		wantFired   []string // offsets of delivered occurrences after the restart
		wantMissed  []time.Duration
		fired, miss int // stored counts at the end, including the first run's two
	}{
		{name: "latest within grace fires once", grace: 15 * time.Minute,
			wantFired: []string{"2h0m0s (delivered +5m0s)", "2h10m0s"}, fired: 4},
		{name: "latest beyond grace is missed once", grace: 3 * time.Minute,
			wantFired: []string{"2h10m0s"}, wantMissed: []time.Duration{2 * time.Hour}, fired: 3, miss: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, _ := openStore(t)
				t0 := time.Now()
				n := seed(t, st, "s1", recurring("@every 10m0s", t0.Add(10*time.Minute), t0))[0]
				cfg := nudges.Config{Grace: tc.grace}
				d1 := &fakeDeliverer{}
				stop := start(t, nudges.New(st, d1, cfg, testLogger(t)))
				time.Sleep(25 * time.Minute)
				synctest.Wait()
				stop()
				if got := len(d1.delivered()); got != 2 {
					t.Fatalf("first run delivered %d, want 2", got)
				}

				time.Sleep(100 * time.Minute) // down until +2h05m: ten occurrences pass
				d2 := &fakeDeliverer{}
				stop = start(t, nudges.New(st, d2, cfg, testLogger(t)))
				time.Sleep(10 * time.Minute) // until +2h15m
				synctest.Wait()
				stop()

				var got []string
				for _, x := range describe(d2.delivered(), t0) {
					got = append(got, x[len(fmt.Sprint(n.ID))+1:])
				}
				if !reflect.DeepEqual(got, tc.wantFired) {
					t.Errorf("after the restart delivered %v, want %v", got, tc.wantFired)
				}
				var missed []time.Duration
				for _, r := range d2.reports() {
					for _, at := range r.times {
						missed = append(missed, at.Sub(t0))
					}
				}
				if !reflect.DeepEqual(missed, tc.wantMissed) {
					t.Errorf("reported missed %v, want %v", missed, tc.wantMissed)
				}
				after := nudgeByID(t, st, n.ID)
				if after.Fired != tc.fired || after.Missed != tc.miss || !after.NextFireAt.Equal(t0.Add(140*time.Minute)) {
					t.Errorf("after: fired %d missed %d next +%s; want %d %d +2h20m", after.Fired, after.Missed,
						after.NextFireAt.Sub(t0), tc.fired, tc.miss)
				}
			})
		})
	}
}

// TestRestartOverdueExpiryAlwaysFires: an approval timeout that passed while plangate was
// down expires the plan however late: the deadline is over, and expiring is a state
// change, not a reminder that could be stale.
func TestRestartOverdueExpiryAlwaysFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", expireAt(t0, 10*time.Minute), remindAt(t0, 5*time.Minute))
		time.Sleep(3 * time.Hour)
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d, nudges.Config{Grace: 15 * time.Minute}, testLogger(t)))
		synctest.Wait()
		stop()
		got := d.delivered()
		if len(got) != 1 || got[0].id != ns[0].ID || got[0].action != core.NudgeExpire || !got[0].scheduledAt.Equal(ns[0].NextFireAt) {
			t.Errorf("delivered %+v, want the expiry only", got)
		}
		if r := d.reports(); len(r) != 1 || !reflect.DeepEqual(r[0].ids, []int64{ns[1].ID}) {
			t.Errorf("reports %+v, want the reminder reported missed", r)
		}
	})
}

// TestTwoSchedulersShareADatabase runs two schedulers on one database file, as two
// processes would: every occurrence is delivered exactly once between them.
func TestTwoSchedulersShareADatabase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st1, path := openStore(t)
		st2, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st2.Close() })
		t0 := time.Now()
		var ids []int64
		for i := range 4 {
			for _, n := range seed(t, st1, fmt.Sprint("s", i), remindAt(t0, 10*time.Minute), remindAt(t0, 20*time.Minute),
				recurring("@every 1m0s", t0.Add(time.Minute), t0)) {
				ids = append(ids, n.ID)
			}
		}
		d1, d2 := &fakeDeliverer{}, &fakeDeliverer{}
		stop1 := start(t, nudges.New(st1, d1, nudges.Config{}, testLogger(t)))
		stop2 := start(t, nudges.New(st2, d2, nudges.Config{}, testLogger(t)))
		time.Sleep(30*time.Minute + 30*time.Second)
		synctest.Wait()
		stop1()
		stop2()

		seen := map[string]int{}
		for _, x := range append(d1.delivered(), d2.delivered()...) {
			seen[fmt.Sprintf("%d@%s", x.id, x.scheduledAt.Sub(t0))]++
		}
		for occ, n := range seen {
			if n != 1 {
				t.Errorf("occurrence %s delivered %d times", occ, n)
			}
		}
		// Per session: two one-shots and thirty minutes of a one-minute schedule.
		if want := 4 * (2 + 30); len(seen) != want {
			t.Errorf("%d occurrences delivered, want %d", len(seen), want)
		}
		t.Logf("deliveries: first scheduler %d, second %d", len(d1.delivered()), len(d2.delivered()))
	})
}

// TestSchedulerTakesOverFromAnother: when one of two schedulers on a file stops, the other
// keeps firing every schedule, including the occurrences it lost to the first one before.
func TestSchedulerTakesOverFromAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st1, path := openStore(t)
		st2, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st2.Close() })
		t0 := time.Now()
		n := seed(t, st1, "s1", recurring("@every 1m0s", t0.Add(time.Minute), t0))[0]
		d1, d2 := &fakeDeliverer{}, &fakeDeliverer{}
		stop1 := start(t, nudges.New(st1, d1, nudges.Config{}, testLogger(t)))
		stop2 := start(t, nudges.New(st2, d2, nudges.Config{}, testLogger(t)))
		time.Sleep(20*time.Minute + 30*time.Second)
		synctest.Wait()
		// Stop the one that fired the latest occurrence: the other lost it, and must still
		// have the schedule.
		last := func(d *fakeDeliverer) time.Time {
			ds := d.delivered()
			if len(ds) == 0 {
				return time.Time{}
			}
			return ds[len(ds)-1].scheduledAt
		}
		winner, loser, stopWinner, stopLoser := d1, d2, stop1, stop2
		if last(d2).After(last(d1)) {
			winner, loser, stopWinner, stopLoser = d2, d1, stop2, stop1
		}
		stopWinner()
		before := len(winner.delivered())
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		stopLoser()
		if got := len(winner.delivered()); got != before {
			t.Errorf("the stopped scheduler delivered %d more", got-before)
		}
		if got := len(d1.delivered()) + len(d2.delivered()); got != 30 {
			t.Errorf("%d occurrences delivered in 30 minutes, want 30 (stopped one %d, the other %d)", got, before, len(loser.delivered()))
		}
		if got := nudgeByID(t, st1, n.ID); got.Fired != 30 {
			t.Errorf("stored fired count %d, want 30", got.Fired)
		}
	})
}
