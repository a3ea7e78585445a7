package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestPersonNamedSystemIsNotTheScheduler: "!system /plan off" in the terminal writes an
// audit row of a person named system, not one that looks like the scheduler's: the actor
// has a kind.
func TestPersonNamedSystemIsNotTheScheduler(t *testing.T) {
	h := newHarness(t, withNudges)
	h.say("a", "system", "/plan on") // the owner of chat a is a person whose id is "system"
	h.model.push(sessionID("a"), calls(propose("Mine", "x")))
	h.say("a", "system", "make a plan")
	h.say("a", "system", "/plan off")

	p := h.toPending("b", "Slow")
	var exp core.Nudge
	for _, n := range h.nudges("b") {
		if n.Action == core.NudgeExpire && n.PlanID == p.ID {
			exp = n
		}
	}
	h.clock = exp.NextFireAt
	if err := h.eng.Nudge(context.Background(), exp, exp.NextFireAt); err != nil {
		t.Fatal(err)
	}

	person := lastEvent(t, h, "a", core.EventAbandoned)
	scheduler := lastEvent(t, h, "b", core.EventExpired)
	if person.Actor != core.PersonActor("system") || scheduler.Actor != core.SystemActor {
		t.Fatalf("actors: person %+v, scheduler %+v", person.Actor, scheduler.Actor)
	}
	if person.Actor == scheduler.Actor || person.Actor.String() == scheduler.Actor.String() {
		t.Fatalf("a person named system and the scheduler are indistinguishable: %q", person.Actor)
	}
	if agent := lastEvent(t, h, "a", core.EventProposed); agent.Actor != core.AgentActor {
		t.Fatalf("the proposal's actor is %+v, want the agent", agent.Actor)
	}
}

func TestAutoApproveIsARule(t *testing.T) {
	h := newHarness(t)
	h.say("main", "local", "/plan auto")
	h.say("main", "local", "/plan on")
	h.model.push(sessionID("main"), calls(propose("Quick", "x")), text("done"))
	h.say("main", "local", "go")
	if ev := lastEvent(t, h, "main", core.EventAutoAccepted); ev.Actor != core.AutoRule || ev.Actor.String() != "rule:auto" {
		t.Fatalf("auto-accepted by %+v (%q), want the auto rule", ev.Actor, ev.Actor.String())
	}
	if ev := lastEvent(t, h, "main", core.EventAutoChanged); ev.Actor.String() != "person:local" {
		t.Fatalf("auto-approve turned on by %q, want person:local", ev.Actor.String())
	}
}

func lastEvent(t *testing.T, h *harness, chat string, k core.EventKind) core.Event {
	t.Helper()
	evs, err := h.st.Events(context.Background(), sessionID(chat))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == k {
			return evs[i]
		}
	}
	t.Fatalf("no %s event in %s", k, chat)
	return core.Event{}
}

func TestActorStoredForms(t *testing.T) {
	for _, c := range []struct {
		a    core.Actor
		want string
	}{
		{core.PersonActor("alice"), "person:alice"},
		{core.PersonActor("system"), "person:system"},
		{core.PersonActor("team:x"), "person:team:x"},
		{core.AutoRule, "rule:auto"},
		{core.AgentActor, "agent"},
		{core.SystemActor, "system"},
		{core.Actor{}, ""},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.a, got, c.want)
		}
		if back := core.ParseActor(c.want); back != c.a {
			t.Errorf("ParseActor(%q) = %+v, want %+v", c.want, back, c.a)
		}
		b, err := json.Marshal(struct{ Actor core.Actor }{c.a})
		if err != nil || string(b) != `{"Actor":"`+c.want+`"}` {
			t.Errorf("JSON of %+v: %s, %v", c.a, b, err)
		}
	}
	if got := core.ParseActor("U123"); got != core.PersonActor("U123") {
		t.Errorf("a bare id from before actor kinds reads as %+v, want a person", got)
	}
}

// TestAdminActorIsItsOwnKind: the admin API's operator is stored as "admin:<name>" and read
// back as an admin, while a person whose platform id merely starts with "admin:" stays a
// person.
func TestAdminActorIsItsOwnKind(t *testing.T) {
	a := core.AdminActor("ops")
	if a.String() != "admin:ops" || core.ParseActor("admin:ops") != a {
		t.Fatalf("admin actor %q parses back as %+v", a, core.ParseActor(a.String()))
	}
	if p := core.ParseActor("person:admin:ops"); p.Kind != core.ActorPerson || p == a {
		t.Fatalf("a person with id admin:ops read as %+v", p)
	}
}
