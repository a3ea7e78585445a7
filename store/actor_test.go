package store

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestActorMigrationKeepsMeaning: rows written before actors had kinds ("agent",
// "system", "auto" beside people's ids) read back as the same actors after 0002.
func TestActorMigrationKeepsMeaning(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 || ms[1].name != "actor_kinds" {
		t.Fatalf("migration 2 is %v, want actor_kinds", ms[1].name)
	}
	for _, a := range []string{"agent", "system", "auto", "U123", ""} {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO plan_events (session_id, kind, actor, at) VALUES ('s1', 'accepted', ?, ?)`,
			a, "2026-11-30T09:00:00.000000000Z"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.w.ExecContext(ctx, ms[1].sql); err != nil {
		t.Fatalf("running 0002 on old rows: %v", err)
	}
	evs, err := s.Events(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Actor{core.AgentActor, core.SystemActor, core.AutoRule, core.PersonActor("U123"), {}}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, e := range evs {
		if e.Actor != want[i] {
			t.Errorf("row %d: actor %+v, want %+v", i, e.Actor, want[i])
		}
	}
}

// TestPersonNamedSystemIsNotTheScheduler: the stored forms of a person whose id is
// "system" and of the scheduler differ, and both read back as what they were.
func TestPersonNamedSystemIsNotTheScheduler(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	se := fullSession("s1")
	se.PlanID, se.ApprovalID = "", ""
	evs := []core.Event{
		{Kind: core.EventAborted, Actor: core.PersonActor("system"), Channel: "terminal", At: at(1)},
		{Kind: core.EventExpired, Actor: core.SystemActor, Channel: "terminal", At: at(2)},
	}
	if _, err := s.Commit(ctx, core.Change{Session: &se, Events: evs}); err != nil {
		t.Fatal(err)
	}
	var stored []string
	rows, err := s.r.QueryContext(ctx, `SELECT actor FROM plan_events WHERE session_id = 's1' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, a)
	}
	if len(stored) != 2 || stored[0] != "person:system" || stored[1] != "system" {
		t.Fatalf("stored actors %q, want [person:system system]", stored)
	}
	got, err := s.Events(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Actor != core.PersonActor("system") || got[1].Actor != core.SystemActor {
		t.Fatalf("read back %+v and %+v", got[0].Actor, got[1].Actor)
	}
}
