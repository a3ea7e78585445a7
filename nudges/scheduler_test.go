package nudges_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

func TestOneShotsFireOnceEachAtTheirTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute), remindAt(t0, 30*time.Minute), remindAt(t0, time.Hour))
		other := seed(t, st, "s2", remindAt(t0, 30*time.Minute))
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d, nudges.Config{}, testLogger(t)))

		time.Sleep(15 * time.Minute)
		synctest.Wait()
		if got := describe(d.delivered(), t0); !reflect.DeepEqual(got, []string{idAt(ns[0], "10m0s")}) {
			t.Fatalf("after 15 min delivered %v, want only the 10m nudge", got)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		stop()

		want := []string{idAt(ns[0], "10m0s"), idAt(ns[1], "30m0s"), idAt(other[0], "30m0s"), idAt(ns[2], "1h0m0s")}
		if got := describe(d.delivered(), t0); !reflect.DeepEqual(got, want) {
			t.Errorf("delivered %v, want %v (each once, on time)", got, want)
		}
		for _, n := range append(ns, other...) {
			got := nudgeByID(t, st, n.ID)
			if got.Status != core.NudgeDone || got.Fired != 1 || got.Missed != 0 || !got.NextFireAt.IsZero() {
				t.Errorf("nudge %d after firing: %+v", n.ID, got)
			}
		}
		if len(d.reports()) != 0 {
			t.Errorf("missed reports %v, want none", d.reports())
		}
	})
}

// idAt is how describe renders an on-time delivery of n at offset from the start.
func idAt(n core.Nudge, offset string) string { return fmt.Sprintf("%d@%s", n.ID, offset) }

func TestRecurringSchedules(t *testing.T) {
	// The bubble's clock starts at 2000-01-01 00:00 UTC, a Saturday.
	tests := []struct {
		name   string
		spec   string
		run    time.Duration
		want   []string // delivery times, UTC
		after  string   // the stored next fire time afterwards
		zoneOK bool     // the spec names its zone, so the machine's zone does not matter
	}{
		{
			name: "every 2h keeps its rhythm", spec: "@every 2h0m0s", run: 7 * time.Hour, zoneOK: true,
			want:  []string{"2000-01-01T02:00:00Z", "2000-01-01T04:00:00Z", "2000-01-01T06:00:00Z"},
			after: "2000-01-01T08:00:00Z",
		},
		{
			name: "weekdays 9:00 in Berlin", spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", run: 7 * 24 * time.Hour, zoneOK: true,
			want: []string{"2000-01-03T08:00:00Z", "2000-01-04T08:00:00Z", "2000-01-05T08:00:00Z",
				"2000-01-06T08:00:00Z", "2000-01-07T08:00:00Z"},
			after: "2000-01-10T08:00:00Z",
		},
		{
			name: "New York across the DST change", spec: "CRON_TZ=America/New_York 0 12 1,2 4 *", run: 95 * 24 * time.Hour, zoneOK: true,
			// 2000-04-02 is the first day of daylight saving time: noon is 16:00 UTC, not 17:00.
			want:  []string{"2000-04-01T17:00:00Z", "2000-04-02T16:00:00Z"},
			after: "2001-04-01T16:00:00Z",
		},
		{
			name: "descriptor", spec: "@hourly", run: 3*time.Hour + time.Minute,
			want:  []string{"2000-01-01T01:00:00Z", "2000-01-01T02:00:00Z", "2000-01-01T03:00:00Z"},
			after: "2000-01-01T04:00:00Z",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.zoneOK && time.Local.String() != "UTC" {
				if _, off := time.Now().In(time.Local).Zone(); off%3600 != 0 {
					t.Skip("the local zone is not a whole number of hours from UTC")
				}
			}
			synctest.Test(t, func(t *testing.T) {
				st, _ := openStore(t)
				t0 := time.Now()
				// The engine computes the first time with Specs.Next; so does this.
				first, err := nudges.Specs{}.Next(tc.spec, t0)
				if err != nil {
					t.Fatal(err)
				}
				n := seed(t, st, "s1", recurring(tc.spec, first, t0))[0]
				d := &fakeDeliverer{}
				stop := start(t, nudges.New(st, d, nudges.Config{}, testLogger(t)))
				time.Sleep(tc.run)
				synctest.Wait()
				stop()

				var got []string
				for _, x := range d.delivered() {
					got = append(got, x.scheduledAt.UTC().Format(time.RFC3339))
					if !x.at.Equal(x.scheduledAt) {
						t.Errorf("occurrence %s delivered at %s", x.scheduledAt, x.at)
					}
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("delivered %v, want %v", got, tc.want)
				}
				after := nudgeByID(t, st, n.ID)
				if after.Status != core.NudgeActive || after.Fired != len(tc.want) || after.NextFireAt.UTC().Format(time.RFC3339) != tc.after {
					t.Errorf("after: status %s fired %d next %s; want active, %d, %s", after.Status, after.Fired,
						after.NextFireAt.UTC().Format(time.RFC3339), len(tc.want), tc.after)
				}
			})
		})
	}
}

func TestSnoozeAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute), remindAt(t0, 30*time.Minute), expireAt(t0, 2*time.Hour))
		d := &fakeDeliverer{}
		s := nudges.New(st, d, nudges.Config{}, testLogger(t))
		stop := start(t, s)
		synctest.Wait()

		// /plan nudge snooze 45m at +5m: the reminders are replaced, the timeout stays.
		time.Sleep(5 * time.Minute)
		snooze := remindAt(time.Now(), 45*time.Minute)
		if _, err := st.Commit(ctx, core.Change{SessionID: "s1", CancelReminders: true, Nudges: []core.Nudge{snooze}}); err != nil {
			t.Fatal(err)
		}
		s.SessionChanged(ctx, "s1")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := describe(d.delivered(), t0); len(got) != 1 || !strings.HasSuffix(got[0], "@50m0s") || d.delivered()[0].id == ns[0].ID {
			t.Fatalf("after snoozing delivered %v, want only the snoozed nudge at 50m", got)
		}

		// The decision at +1h30m cancels everything, the timeout included.
		time.Sleep(25 * time.Minute)
		if _, err := st.Commit(ctx, core.Change{SessionID: "s1", CancelNudges: true}); err != nil {
			t.Fatal(err)
		}
		s.SessionChanged(ctx, "s1")
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		stop()
		if got := len(d.delivered()); got != 1 {
			t.Errorf("delivered %d nudges, want 1: the cancelled ones must not fire", got)
		}
		for _, n := range ns {
			if got := nudgeByID(t, st, n.ID); got.Status != core.NudgeCancelled || got.Fired != 0 {
				t.Errorf("nudge %d: %+v, want cancelled and never fired", n.ID, got)
			}
		}
	})
}

// TestCancelledUnbeknownToTheScheduler cancels schedules in the store without telling the
// scheduler (another process made the decision, or the notice was lost): the claim in the
// store refuses them, so nothing is delivered.
func TestCancelledUnbeknownToTheScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute), recurring("@every 5m0s", t0.Add(5*time.Minute), t0))
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d, nudges.Config{}, testLogger(t)))
		synctest.Wait()
		if _, err := st.Commit(ctx, core.Change{SessionID: "s1", CancelNudges: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		if got := d.delivered(); len(got) != 0 {
			t.Errorf("delivered %v after the cancellation", describe(got, t0))
		}
		for _, n := range ns {
			if got := nudgeByID(t, st, n.ID); got.Fired != 0 || got.Status != core.NudgeCancelled {
				t.Errorf("nudge %d: %+v", n.ID, got)
			}
		}
	})
}

// racingStore commits a cancellation of the session right before or right after the
// scheduler's claim of an occurrence, as a decision made in that very instant would.
type racingStore struct {
	*store.Store
	sessionOf map[int64]string
	before    func(sid string) bool // cancel before the claim
	after     func(sid string) bool // cancel after it
}

func (r *racingStore) FireNudge(ctx context.Context, id int64, at time.Time, outcome string, firedAt, next time.Time) (bool, error) {
	sid := r.sessionOf[id]
	cancel := func() error {
		_, err := r.Commit(ctx, core.Change{SessionID: sid, CancelNudges: true})
		return err
	}
	if r.before(sid) {
		if err := cancel(); err != nil {
			return false, err
		}
	}
	ok, err := r.Store.FireNudge(ctx, id, at, outcome, firedAt, next)
	if err == nil && r.after(sid) {
		err = cancel()
	}
	return ok, err
}

// TestCancelRacingFiring: a cancellation committed between the moment a nudge falls due
// and its claim wins, and the nudge is never delivered; one committed after the claim
// comes too late for the scheduler (the engine then drops the stale nudge, see
// engine.Engine.Nudge). Either way the store agrees with what was delivered.
func TestCancelRacingFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		rs := &racingStore{Store: st, sessionOf: map[int64]string{},
			before: func(sid string) bool { return strings.HasPrefix(sid, "before") },
			after:  func(sid string) bool { return strings.HasPrefix(sid, "after") },
		}
		var ids []int64
		for _, sid := range []string{"before1", "before2", "after1", "after2", "untouched"} {
			for _, n := range seed(t, st, sid, remindAt(t0, 10*time.Minute), recurring("@every 10m0s", t0.Add(10*time.Minute), t0)) {
				ids = append(ids, n.ID)
				rs.sessionOf[n.ID] = sid
			}
		}
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(rs, d, nudges.Config{}, testLogger(t)))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()

		delivered := map[string]int{}
		for _, x := range d.delivered() {
			delivered[rs.sessionOf[x.id]]++
		}
		// "after": the one-shot is claimed first, and the cancellation that follows its claim
		// comes before the recurring schedule's, so only the one-shot goes out.
		// "untouched": the one-shot and six recurring occurrences.
		want := map[string]int{"after1": 1, "after2": 1, "untouched": 7}
		if !reflect.DeepEqual(delivered, want) {
			t.Errorf("deliveries per session %v, want %v", delivered, want)
		}
		for _, id := range ids {
			n := nudgeByID(t, st, id)
			if strings.HasPrefix(rs.sessionOf[id], "before") && (n.Fired != 0 || n.Status != core.NudgeCancelled) {
				t.Errorf("nudge %d of %s: fired %d, status %s; a cancelled schedule must never fire", id, rs.sessionOf[id], n.Fired, n.Status)
			}
		}
	})
}

func TestDeliveryPanicsAndErrorsAreContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute), remindAt(t0, 10*time.Minute), remindAt(t0, 20*time.Minute))
		bad := seed(t, st, "s2", remindAt(t0, 10*time.Minute))
		d := &fakeDeliverer{hook: func(n core.Nudge) error {
			switch n.ID {
			case ns[0].ID:
				panic("delivery exploded")
			case bad[0].ID:
				return errors.New("channel down")
			}
			return nil
		}}
		var logs syncBuffer
		stop := start(t, nudges.New(st, d, nudges.Config{}, newBufLogger(&logs)))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		want := []string{idAt(ns[1], "10m0s"), idAt(bad[0], "10m0s"), idAt(ns[2], "20m0s")}
		if got := describe(d.delivered(), t0); !reflect.DeepEqual(got, want) {
			t.Errorf("delivered %v, want %v: a panic must not stop the others", got, want)
		}
		for _, w := range []string{"delivery exploded", "channel down"} {
			if !strings.Contains(logs.String(), w) {
				t.Errorf("log lacks %q:\n%s", w, logs.String())
			}
		}
		// Both failed deliveries stay recorded: at most once, never retried.
		for _, id := range []int64{ns[0].ID, bad[0].ID} {
			if n := nudgeByID(t, st, id); n.Fired != 1 || n.Status != core.NudgeDone {
				t.Errorf("nudge %d: %+v", id, n)
			}
		}
	})
}

// flakyStore fails FireNudge a number of times before passing calls on.
type flakyStore struct {
	*store.Store
	fails int
	calls int
}

func (f *flakyStore) FireNudge(ctx context.Context, id int64, at time.Time, outcome string, firedAt, next time.Time) (bool, error) {
	f.calls++
	if f.fails > 0 {
		f.fails--
		return false, errors.New("disk I/O error")
	}
	return f.Store.FireNudge(ctx, id, at, outcome, firedAt, next)
}

func TestStoreFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		ns := seed(t, st, "s1", remindAt(t0, 10*time.Minute))
		fs := &flakyStore{Store: st, fails: 2}
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(fs, d, nudges.Config{}, testLogger(t)))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		got := d.delivered()
		if len(got) != 1 || got[0].id != ns[0].ID || !got[0].scheduledAt.Equal(ns[0].NextFireAt) || got[0].at.Sub(got[0].scheduledAt) <= 0 {
			t.Fatalf("delivered %v, want the nudge once, a little late after two failed attempts", describe(got, t0))
		}
		if fs.calls != 3 {
			t.Errorf("FireNudge called %d times, want 3", fs.calls)
		}
	})
}

// failingStore cannot list anything.
type failingStore struct{ *store.Store }

func (failingStore) ActiveNudges(context.Context) ([]core.Nudge, error) {
	return nil, errors.New("no such table: nudges")
}

func (failingStore) Nudges(context.Context, string) ([]core.Nudge, error) {
	return nil, errors.New("no such table: nudges")
}

func TestRunErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		var logs syncBuffer
		s := nudges.New(failingStore{st}, &fakeDeliverer{}, nudges.Config{}, newBufLogger(&logs))
		if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "loading nudge schedules") {
			t.Errorf("Run with a failing store = %v, want a loading error", err)
		}
		s.SessionChanged(context.Background(), "s1") // must only log
		if !strings.Contains(logs.String(), "reloading nudge schedules") {
			t.Errorf("SessionChanged did not log its failure:\n%s", logs.String())
		}

		ok := nudges.New(st, &fakeDeliverer{}, nudges.Config{}, testLogger(t))
		stop := start(t, ok)
		synctest.Wait()
		if err := ok.Run(context.Background()); err == nil {
			t.Error("a second Run succeeded")
		}
		stop()
	})
}

// TestInvalidStoredSpecFiresOnce: a recurring row whose spec cannot be parsed (only a
// hand-edited database has one) still reminds once, then ends.
func TestInvalidStoredSpecFiresOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		n := seed(t, st, "s1", recurring("every tuesday-ish", t0.Add(time.Minute), t0))[0]
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d, nudges.Config{}, testLogger(t)))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		if got := describe(d.delivered(), t0); !reflect.DeepEqual(got, []string{idAt(n, "1m0s")}) {
			t.Errorf("delivered %v", got)
		}
		if got := nudgeByID(t, st, n.ID); got.Status != core.NudgeDone {
			t.Errorf("status %s, want done", got.Status)
		}
	})
}

// TestSessionChangedBeforeRun: the engine may report changes before the scheduler runs;
// nothing is lost or doubled.
func TestSessionChangedBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		n := seed(t, st, "s1", remindAt(t0, time.Minute))[0]
		d := &fakeDeliverer{}
		s := nudges.New(st, d, nudges.Config{}, testLogger(t))
		s.SessionChanged(context.Background(), "s1")
		stop := start(t, s)
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		if got := describe(d.delivered(), t0); !reflect.DeepEqual(got, []string{idAt(n, "1m0s")}) {
			t.Errorf("delivered %v", got)
		}
	})
}

// TestRealClock runs once outside a synctest bubble, on the real clock and real timers,
// with nudges a fraction of a second away. It waits for the outcome, never for a time.
func TestRealClock(t *testing.T) {
	st, _ := openStore(t)
	t0 := time.Now()
	// Two sessions: reminders of one decision that fall due in the same round are collapsed
	// to the latest (no bursts), which a loaded machine could otherwise make happen here.
	ns := append(seed(t, st, "s1", remindAt(t0, 100*time.Millisecond)),
		seed(t, st, "s2", recurring("@every 1s", t0.Truncate(time.Second).Add(time.Second), t0))...)
	d := &fakeDeliverer{}
	s := nudges.New(st, d, nudges.Config{}, testLogger(t))
	stop := start(t, s)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[int64]int{}
		for _, x := range d.delivered() {
			got[x.id]++
		}
		if got[ns[0].ID] == 1 && got[ns[1].ID] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries so far %v, want the one-shot and two recurring occurrences", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	got := map[int64]int{}
	for _, x := range d.delivered() {
		got[x.id]++
	}
	if got[ns[0].ID] != 1 {
		t.Errorf("one-shot delivered %d times", got[ns[0].ID])
	}
	if n := nudgeByID(t, st, ns[1].ID); n.Fired != got[ns[1].ID] {
		t.Errorf("recurring delivered %d times but stored fired %d", got[ns[1].ID], n.Fired)
	}

	// A scheduler whose context ended before it started stops without an error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := nudges.New(st, d, nudges.Config{}, testLogger(t)).Run(ctx); err != nil {
		t.Errorf("Run with an ended context = %v, want nil", err)
	}
}
