package engine_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

// fire is what the scheduler does with a due one-shot reminder: it records the occurrence
// (the schedule is then done) and hands it to the engine.
func (h *harness) fire(n core.Nudge) {
	h.t.Helper()
	ctx := context.Background()
	if ok, err := h.st.FireNudge(ctx, n.ID, n.NextFireAt, "fired", h.clock, time.Time{}); err != nil || !ok {
		h.t.Fatalf("recording the occurrence of %d: %v %v", n.ID, ok, err)
	}
	if err := h.eng.Nudge(ctx, n, n.NextFireAt); err != nil {
		h.t.Fatal(err)
	}
}

// Nobody answered: after the last reminder of a pending plan, plan_mode.escalate_to is
// told once, in its own chat, with the plan and how to decide; the plan records it, the
// audit log has one escalated row, /plan status shows it, and the earlier reminder, a
// second delivery of the last one and a decided plan escalate nothing.
func TestEscalationAfterTheLastReminder(t *testing.T) {
	ops := core.Address{Channel: "slack", Account: "T1", Chat: "C0OPS"}
	h := newHarness(t, withNudges, func(c *engine.Config) {
		c.EscalateTo = []core.Address{ops}
		c.DecideURL = "https://plangate.example/"
	})
	p := h.toPending("main", "Waiting plan")
	var reminders []core.Nudge
	for _, n := range h.nudges("main") {
		if n.Action == core.NudgeRemind {
			reminders = append(reminders, n)
		}
	}
	if len(reminders) != 2 {
		t.Fatalf("reminders %+v, want 2", reminders)
	}
	toOps := func() []core.Reply {
		var out []core.Reply
		for _, r := range h.out.all() {
			if r.To == ops {
				out = append(out, r)
			}
		}
		return out
	}

	h.clock = h.clock.Add(10 * time.Minute)
	h.fire(reminders[0])
	if got := toOps(); len(got) != 0 {
		t.Fatalf("escalated after the first of two reminders: %+v", got)
	}

	h.clock = h.clock.Add(20 * time.Minute)
	h.fire(reminders[1])
	got := toOps()
	if len(got) != 1 {
		t.Fatalf("%d notices to %s after the last reminder, want 1", len(got), ops.SessionID())
	}
	mustContain(t, got[0].Text, `Nobody has decided on Plan v1 "Waiting plan" in `+sessionID("main")+" after 30 min and 2 reminders", "/plan accept",
		"Or on the web: https://plangate.example/dashboard/sessions/"+url.PathEscape(sessionID("main")))
	stored := h.plan(p.ID)
	if e := stored.Run.Escalated; e == nil || len(e.To) != 1 || e.To[0] != "slack:T1:C0OPS" || !e.At.Equal(h.clock) {
		t.Fatalf("stored escalation %+v", stored.Run.Escalated)
	}
	if n := len(h.eventsOf("main", core.EventEscalated)); n != 1 {
		t.Fatalf("%d escalated audit rows, want 1", n)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "escalated: nobody decided after the last reminder; told slack:T1:C0OPS at 2026-11-30 09:30 UTC")

	// The same occurrence handed over again (a retry) escalates nothing more.
	if err := h.eng.Nudge(context.Background(), reminders[1], reminders[1].NextFireAt); err != nil {
		t.Fatal(err)
	}
	if n := len(toOps()); n != 1 || len(h.eventsOf("main", core.EventEscalated)) != 1 {
		t.Fatalf("%d notices after a repeated delivery, want 1", n)
	}
	h.say("main", "local", "/plan accept")
	if strings.Contains(lastText(h.say("main", "local", "/plan status")), "escalated:") {
		t.Fatal("a decided plan's status still shows the escalation")
	}
}

// With no escalate_to nothing is escalated, and a plan decided before its last reminder
// is not either.
func TestNoEscalationWithoutATargetOrAfterADecision(t *testing.T) {
	h := newHarness(t, withNudges)
	p := h.toPending("main", "Waiting plan")
	for _, n := range h.nudges("main") {
		if n.Action == core.NudgeRemind {
			h.clock = n.NextFireAt
			h.fire(n)
		}
	}
	if h.plan(p.ID).Run.Escalated != nil || len(h.eventsOf("main", core.EventEscalated)) != 0 {
		t.Fatal("escalated with no plan_mode.escalate_to")
	}

	ops := core.Address{Channel: "slack", Account: "T1", Chat: "C0OPS"}
	h2 := newHarness(t, withNudges, func(c *engine.Config) { c.EscalateTo = []core.Address{ops} })
	h2.toPending("main", "Decided plan")
	ns := h2.nudges("main")
	h2.say("main", "local", "/plan accept")
	for _, n := range ns {
		if n.Action == core.NudgeRemind {
			_ = h2.eng.Nudge(context.Background(), n, n.NextFireAt)
		}
	}
	for _, r := range h2.out.all() {
		if r.To == ops {
			t.Fatalf("a decided plan was escalated: %q", r.Text)
		}
	}
}
