package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

func remind(spec string, next time.Time) core.Nudge {
	return core.Nudge{Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: spec, NextFireAt: next, CreatedAt: at(0)}
}

func nudgeIDs(ns []core.Nudge) []int64 {
	ids := []int64{}
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	return ids
}

func testNudges(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	seed(t, s, "s2")
	expire := core.Nudge{Kind: core.NudgeOnce, Action: core.NudgeExpire, Spec: "24h", NextFireAt: at(60), PlanID: "p1", CreatedAt: at(0)}
	commit(t, s, core.Change{SessionID: "s1", Nudges: []core.Nudge{remind("30m", at(30)), remind("10m", at(10)), expire}})
	commit(t, s, core.Change{SessionID: "s2", Nudges: []core.Nudge{remind("20m", at(20))}})
	list, err := s.Nudges(ctx, "s1")
	if err != nil || len(list) != 3 {
		t.Fatalf("Nudges(s1) = %+v, %v", list, err)
	}
	want := []core.Nudge{remind("10m", at(10)), remind("30m", at(30)), expire}
	for i := range list {
		w := want[i]
		w.ID, w.SessionID, w.Status = list[i].ID, "s1", core.NudgeActive
		if !reflect.DeepEqual(list[i], w) {
			t.Fatalf("nudge %d = %+v, want %+v", i, list[i], w)
		}
	}
	if list[0].ID <= 0 || list[0].ID == list[1].ID {
		t.Fatalf("nudge ids %v: want distinct positive ids", nudgeIDs(list))
	}
	all, err := s.Nudges(ctx, "")
	if err != nil || len(all) != 4 || all[1].SessionID != "s2" {
		t.Fatalf("Nudges(\"\") = %+v, %v; want 4, s2's second by time", all, err)
	}
	// CancelReminders keeps the expiry; CancelNudges then cancels it too.
	commit(t, s, core.Change{SessionID: "s1", CancelReminders: true})
	active, err := s.ActiveNudges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(active); got != 2 || active[0].SessionID != "s2" || active[1].Action != core.NudgeExpire {
		t.Fatalf("ActiveNudges after CancelReminders = %+v", active)
	}
	// Cancelling happens before new schedules are inserted: a change replaces them.
	commit(t, s, core.Change{SessionID: "s1", CancelNudges: true, Nudges: []core.Nudge{remind("5m", at(5))}})
	list, _ = s.Nudges(ctx, "s1")
	if len(list) != 4 || list[0].Spec != "5m" || list[0].Status != core.NudgeActive {
		t.Fatalf("after replacing: %+v", list)
	}
	for _, n := range list[1:] {
		if n.Status != core.NudgeCancelled || !n.NextFireAt.IsZero() {
			t.Fatalf("cancelled nudge %+v: want cancelled with no next time", n)
		}
	}
	// The inactive ones come newest first after the active ones.
	if list[1].ID < list[2].ID || list[2].ID < list[3].ID {
		t.Fatalf("inactive order %v: want newest first", nudgeIDs(list[1:]))
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Nudges: []core.Nudge{{Kind: core.NudgeOnce, Action: "nag", Spec: "1m"}}}); err == nil {
		t.Fatal("an invalid nudge action was accepted")
	}
}

func testFireNudge(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	rec := core.Nudge{Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: "@every 1h", NextFireAt: at(60), CreatedAt: at(0)}
	commit(t, s, core.Change{SessionID: "s1", Nudges: []core.Nudge{remind("10m", at(10)), rec}})
	list, _ := s.Nudges(ctx, "s1")
	once, every := list[0].ID, list[1].ID

	fire := func(id int64, sched time.Time, outcome string, next time.Time) bool {
		t.Helper()
		ok, err := s.FireNudge(ctx, id, sched, outcome, sched, next)
		if err != nil {
			t.Fatalf("FireNudge(%d, %s): %v", id, sched, err)
		}
		return ok
	}
	if !fire(once, at(10), store.NudgeFired, time.Time{}) {
		t.Fatal("the one-shot nudge was not claimed")
	}
	if fire(once, at(10), store.NudgeFired, time.Time{}) {
		t.Fatal("the one-shot nudge was claimed twice")
	}
	// A recurring one advances; the same occurrence cannot be claimed again, an earlier
	// one neither, and a later due one (after downtime) can, as missed.
	if !fire(every, at(60), store.NudgeFired, at(120)) || fire(every, at(60), store.NudgeFired, at(120)) {
		t.Fatal("recurring occurrence at(60): want claimed exactly once")
	}
	if !fire(every, at(300), store.NudgeMissed, at(360)) {
		t.Fatal("a later occurrence after downtime was not claimed")
	}
	if _, err := s.FireNudge(ctx, every, at(400), store.NudgeFired, at(400), at(400)); err == nil {
		t.Fatal("a next time not after the occurrence was accepted")
	}
	if _, err := s.FireNudge(ctx, every, at(400), "lost", at(400), time.Time{}); err == nil {
		t.Fatal("an invalid outcome was accepted")
	}
	list, _ = s.Nudges(ctx, "s1")
	byID := map[int64]core.Nudge{list[0].ID: list[0], list[1].ID: list[1]}
	if n := byID[once]; n.Status != core.NudgeDone || n.Fired != 1 || !n.NextFireAt.IsZero() {
		t.Fatalf("one-shot after firing = %+v", n)
	}
	if n := byID[every]; n.Status != core.NudgeActive || n.Fired != 1 || n.Missed != 1 || !n.NextFireAt.Equal(at(360)) {
		t.Fatalf("recurring after firing = %+v", n)
	}
	ledger, err := s.NudgeFirings(ctx, every)
	if err != nil || len(ledger) != 2 {
		t.Fatalf("NudgeFirings = %+v, %v", ledger, err)
	}
	if f := ledger[0]; !f.ScheduledAt.Equal(at(60)) || f.Outcome != store.NudgeFired || !f.FiredAt.Equal(at(60)) || f.RecordedAt.IsZero() {
		t.Fatalf("ledger[0] = %+v", f)
	}
	if f := ledger[1]; !f.ScheduledAt.Equal(at(300)) || f.Outcome != store.NudgeMissed || !f.FiredAt.IsZero() {
		t.Fatalf("ledger[1] = %+v", f)
	}
	if all, _ := s.NudgeFirings(ctx, 0); len(all) != 3 {
		t.Fatalf("whole ledger has %d rows, want 3", len(all))
	}
	// A cancelled schedule is not claimed.
	commit(t, s, core.Change{SessionID: "s1", CancelNudges: true})
	if fire(every, at(360), store.NudgeFired, at(420)) {
		t.Fatal("a cancelled nudge was claimed")
	}
}
