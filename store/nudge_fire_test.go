package store

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// addNudges stores schedules for session sid (created if needed) and returns them as
// stored, in the order given.
func addNudges(t testing.TB, s *Store, sid string, ns ...core.Nudge) []core.Nudge {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Session(ctx, sid); err != nil {
		if _, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: sid, Phase: core.PhasePlanning}}); err != nil {
			t.Fatalf("creating session %s: %v", sid, err)
		}
	}
	before, err := s.Nudges(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: sid, Nudges: ns}); err != nil {
		t.Fatalf("adding nudges: %v", err)
	}
	all, err := s.Nudges(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	known := map[int64]bool{}
	for _, n := range before {
		known[n.ID] = true
	}
	var out []core.Nudge
	for _, n := range all {
		if !known[n.ID] {
			out = append(out, n)
		}
	}
	if len(out) != len(ns) {
		t.Fatalf("stored %d nudges, found %d new", len(ns), len(out))
	}
	// s.Nudges orders by next fire time; give them back in id order, the order of ns.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].ID < out[i].ID {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func once(at time.Time) core.Nudge {
	return core.Nudge{Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "10m0s", NextFireAt: at, CreatedAt: at.Add(-10 * time.Minute)}
}

func every(at time.Time) core.Nudge {
	return core.Nudge{Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: "@every 1h0m0s", NextFireAt: at, CreatedAt: at.Add(-time.Hour)}
}

func nudgeByID(t testing.TB, s *Store, sid string, id int64) core.Nudge {
	t.Helper()
	ns, err := s.Nudges(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no nudge %d", id)
	return core.Nudge{}
}

func TestFireNudge(t *testing.T) {
	t0 := at(10)
	later := t0.Add(time.Hour)
	type call struct {
		scheduled time.Time
		outcome   string
		next      time.Time
		want      bool
	}
	tests := []struct {
		name       string
		nudge      core.Nudge
		before     func(t *testing.T, s *Store, n core.Nudge)
		calls      []call
		wantStatus core.NudgeStatus
		wantNext   time.Time
		wantFired  int
		wantMissed int
		wantLedger []string // outcome@scheduled minute
	}{
		{
			name: "one-shot fires once and is done", nudge: once(t0),
			calls:      []call{{t0, NudgeFired, time.Time{}, true}, {t0, NudgeFired, time.Time{}, false}},
			wantStatus: core.NudgeDone, wantFired: 1, wantLedger: []string{"fired@10"},
		},
		{
			name: "recurring advances and counts", nudge: every(t0),
			calls: []call{
				{t0, NudgeFired, later, true},
				{t0, NudgeFired, later, false}, // the same occurrence again
				{later, NudgeMissed, later.Add(time.Hour), true},
			},
			wantStatus: core.NudgeActive, wantNext: later.Add(time.Hour), wantFired: 1, wantMissed: 1,
			wantLedger: []string{"fired@10", "missed@10"},
		},
		{
			name: "latest of several missed occurrences", nudge: every(t0),
			calls:      []call{{t0.Add(3 * time.Hour), NudgeMissed, t0.Add(4 * time.Hour), true}},
			wantStatus: core.NudgeActive, wantNext: t0.Add(4 * time.Hour), wantMissed: 1, wantLedger: []string{"missed@10"},
		},
		{
			name: "an occurrence before the stored one is refused", nudge: every(later),
			calls:      []call{{t0, NudgeFired, later, false}},
			wantStatus: core.NudgeActive, wantNext: later,
		},
		{
			name: "cancelled schedule never fires", nudge: once(t0),
			before: func(t *testing.T, s *Store, n core.Nudge) {
				if _, err := s.Commit(context.Background(), core.Change{SessionID: n.SessionID, CancelNudges: true}); err != nil {
					t.Fatal(err)
				}
			},
			calls:      []call{{t0, NudgeFired, time.Time{}, false}},
			wantStatus: core.NudgeCancelled,
		},
		{
			name: "an occurrence already in the ledger is refused and nothing changes", nudge: every(t0),
			before: func(t *testing.T, s *Store, n core.Nudge) {
				if _, err := s.w.Exec(`INSERT INTO nudge_firings (nudge_id, scheduled_at, fired_at, outcome, recorded_at) VALUES (?, ?, ?, 'fired', ?)`,
					n.ID, formatTime(t0), formatTime(t0), formatTime(t0)); err != nil {
					t.Fatal(err)
				}
			},
			calls:      []call{{t0, NudgeFired, later, false}},
			wantStatus: core.NudgeActive, wantNext: t0, wantLedger: []string{"fired@10"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t)
			n := addNudges(t, s, "s1", tc.nudge)[0]
			if tc.before != nil {
				tc.before(t, s, n)
			}
			for i, c := range tc.calls {
				got, err := s.FireNudge(ctx, n.ID, c.scheduled, c.outcome, c.scheduled.Add(time.Second), c.next)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got != c.want {
					t.Errorf("call %d: FireNudge = %v, want %v", i, got, c.want)
				}
			}
			after := nudgeByID(t, s, "s1", n.ID)
			if after.Status != tc.wantStatus || !after.NextFireAt.Equal(tc.wantNext) || after.Fired != tc.wantFired || after.Missed != tc.wantMissed {
				t.Errorf("after: status %s next %v fired %d missed %d; want %s %v %d %d", after.Status, after.NextFireAt,
					after.Fired, after.Missed, tc.wantStatus, tc.wantNext, tc.wantFired, tc.wantMissed)
			}
			fs, err := s.NudgeFirings(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			var ledger []string
			for _, f := range fs {
				ledger = append(ledger, fmt.Sprintf("%s@%d", f.Outcome, f.ScheduledAt.Minute()))
				if (f.Outcome == NudgeFired) == f.FiredAt.IsZero() {
					t.Errorf("ledger row %+v: fired_at must be set exactly for fired occurrences", f)
				}
			}
			if !reflect.DeepEqual(ledger, tc.wantLedger) {
				t.Errorf("ledger = %v, want %v", ledger, tc.wantLedger)
			}
		})
	}
}

func TestFireNudgeRejectsBadArguments(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := at(10)
	n := addNudges(t, s, "s1", every(t0))[0]
	tests := []struct {
		name      string
		scheduled time.Time
		outcome   string
		next      time.Time
	}{
		{"unknown outcome", t0, "delivered", t0.Add(time.Hour)},
		{"empty outcome", t0, "", t0.Add(time.Hour)},
		{"no scheduled time", time.Time{}, NudgeFired, t0.Add(time.Hour)},
		{"next not after the occurrence", t0, NudgeFired, t0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ok, err := s.FireNudge(ctx, n.ID, tc.scheduled, tc.outcome, t0, tc.next); err == nil || ok {
				t.Errorf("FireNudge = %v, %v; want an error", ok, err)
			}
		})
	}
	if got := nudgeByID(t, s, "s1", n.ID); got.Fired != 0 || !got.NextFireAt.Equal(t0) {
		t.Errorf("a refused call changed the schedule: %+v", got)
	}
	if ok, err := s.FireNudge(ctx, 9999, t0, NudgeFired, t0, time.Time{}); err != nil || ok {
		t.Errorf("FireNudge on an unknown id = %v, %v; want false, nil", ok, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.FireNudge(cctx, n.ID, t0, NudgeFired, t0, t0.Add(time.Hour)); err == nil {
		t.Error("FireNudge with a cancelled context succeeded")
	}
}

func TestActiveNudges(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := at(10)
	a := addNudges(t, s, "s1", once(t0.Add(time.Hour)), once(t0), every(t0.Add(time.Minute)))
	b := addNudges(t, s, "s2", once(t0.Add(2*time.Minute)))
	if ok, err := s.FireNudge(ctx, a[1].ID, t0, NudgeFired, t0, time.Time{}); err != nil || !ok {
		t.Fatalf("FireNudge = %v, %v", ok, err)
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s2", CancelNudges: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ActiveNudges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, n := range got {
		ids = append(ids, n.ID)
		if n.Status != core.NudgeActive {
			t.Errorf("nudge %d has status %s", n.ID, n.Status)
		}
	}
	if want := []int64{a[2].ID, a[0].ID}; !reflect.DeepEqual(ids, want) {
		t.Errorf("active ids = %v, want %v (soonest first; done %d and cancelled %d left out)", ids, want, a[1].ID, b[0].ID)
	}
}

// TestFireNudgeConcurrentProcesses claims the same occurrences through two stores on one
// file, as two processes would, while a third goroutine cancels half the schedules: every
// occurrence is claimed at most once, and a cancelled schedule is never claimed afterwards.
func TestFireNudgeConcurrentProcesses(t *testing.T) {
	ctx := context.Background()
	s1, path := openTest(t)
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	t0 := at(10)
	const sessions, perSession = 10, 5
	var ids []int64
	for i := range sessions {
		var ns []core.Nudge
		for j := range perSession {
			ns = append(ns, once(t0.Add(time.Duration(j)*time.Second)))
		}
		for _, n := range addNudges(t, s1, fmt.Sprintf("s%d", i), ns...) {
			ids = append(ids, n.ID)
		}
	}
	nudges, err := s1.ActiveNudges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wins [2]atomic.Int64
	var wg sync.WaitGroup
	for k, s := range []*Store{s1, s2} {
		wg.Go(func() {
			for _, n := range nudges {
				ok, err := s.FireNudge(ctx, n.ID, n.NextFireAt, NudgeFired, t0, time.Time{})
				if err != nil {
					t.Errorf("store %d: %v", k, err)
				}
				if ok {
					wins[k].Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < sessions; i += 2 {
			if _, err := s2.Commit(ctx, core.Change{SessionID: fmt.Sprintf("s%d", i), CancelNudges: true}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()

	fs, err := s1.NudgeFirings(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := wins[0].Load() + wins[1].Load(); got != int64(len(fs)) {
		t.Errorf("%d successful claims but %d ledger rows", got, len(fs))
	}
	inLedger := map[int64]bool{}
	for _, f := range fs {
		inLedger[f.NudgeID] = true
	}
	all, err := s1.Nudges(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		switch {
		case n.Status == core.NudgeDone && (!inLedger[n.ID] || n.Fired != 1):
			t.Errorf("nudge %d done with fired=%d, in ledger %v", n.ID, n.Fired, inLedger[n.ID])
		case n.Status == core.NudgeCancelled && (inLedger[n.ID] || n.Fired != 0):
			t.Errorf("nudge %d cancelled but claimed (fired=%d)", n.ID, n.Fired)
		case n.Status == core.NudgeActive:
			t.Errorf("nudge %d still active after both stores tried it", n.ID)
		}
	}
	if len(all) != len(ids) {
		t.Errorf("%d nudges, want %d", len(all), len(ids))
	}
}
