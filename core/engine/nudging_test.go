package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
)

// fakeNudger records SessionChanged calls.
type fakeNudger struct{ changed []string }

func (f *fakeNudger) SessionChanged(_ context.Context, id string) { f.changed = append(f.changed, id) }

func withNudges(c *engine.Config) {
	c.Nudges = []time.Duration{10 * time.Minute, 30 * time.Minute}
	c.ApprovalTimeout = 24 * time.Hour
}

func (h *harness) nudges(chat string) []core.Nudge {
	h.t.Helper()
	ns, err := h.st.Nudges(context.Background(), sessionID(chat))
	if err != nil {
		h.t.Fatal(err)
	}
	return ns
}

func active(ns []core.Nudge) (remind, expire int) {
	for _, n := range ns {
		if n.Status != core.NudgeActive {
			continue
		}
		if n.Action == core.NudgeExpire {
			expire++
		} else {
			remind++
		}
	}
	return remind, expire
}

func TestProposalSchedulesNudgesAndDecisionCancelsThem(t *testing.T) {
	for _, decide := range []string{"/plan accept", "/plan revise no", "/plan off", "/plan auto"} {
		t.Run(decide, func(t *testing.T) {
			h := newHarness(t, withNudges)
			p := h.toPending("main", "Nudged")
			ns := h.nudges("main")
			if r, e := active(ns); r != 2 || e != 1 {
				t.Fatalf("after proposal: %d reminders, %d expiries active; want 2, 1: %+v", r, e, ns)
			}
			for _, n := range ns {
				if n.PlanID != p.ID || n.NextFireAt.IsZero() {
					t.Fatalf("schedule %+v not bound to plan %s", n, p.ID)
				}
			}
			mustContain(t, lastText(h.say("main", "local", "/plan status")), "next nudge: 2026-11-30 09:10 UTC (in 10 min)", "expires 2026-12-01 09:00 UTC")
			h.say("main", "local", decide)
			if r, e := active(h.nudges("main")); r != 0 || e != 0 {
				t.Fatalf("after %s: %d reminders, %d expiries still active", decide, r, e)
			}
		})
	}
}

func TestNudgeDeliveryAndStaleNudges(t *testing.T) {
	h := newHarness(t, withNudges)
	p := h.toPending("main", "Waiting plan")
	n := h.nudges("main")[0]
	h.clock = h.clock.Add(30 * time.Minute)
	before := h.out.count()
	if err := h.eng.Nudge(context.Background(), n, n.NextFireAt); err != nil {
		t.Fatal(err)
	}
	rs := h.out.since(before)
	if len(rs) != 1 || rs[0].Kind != core.ReplyNudge {
		t.Fatalf("nudge replies %+v", rs)
	}
	mustContain(t, rs[0].Text, `Plan v1 "Waiting plan" has waited 30 min for a decision`, "/plan accept", "/plan nudge snooze")
	if len(rs[0].Buttons) != 3 || rs[0].Buttons[0].Action.ApprovalID != p.ApprovalID {
		t.Fatalf("nudge buttons %+v", rs[0].Buttons)
	}
	// The nudge never reached the model.
	for _, req := range h.model.requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "has waited") {
				t.Fatal("a nudge was fed to the model")
			}
		}
	}
	if !strings.Contains(strings.Join(eventsText(h.events("main")), " "), "nudged") {
		t.Fatal("no nudged audit row")
	}
	// After the decision the same schedule's occurrence is dropped.
	h.say("main", "local", "/plan accept")
	before = h.out.count()
	if err := h.eng.Nudge(context.Background(), n, n.NextFireAt); err != nil {
		t.Fatal(err)
	}
	if got := h.out.since(before); len(got) != 0 {
		t.Fatalf("a nudge for a decided plan was delivered: %+v", got)
	}
}

func eventsText(ks []core.EventKind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}

func TestApprovalTimeoutExpiresPlan(t *testing.T) {
	h := newHarness(t, withNudges)
	p := h.toPending("main", "Slow decision")
	var exp core.Nudge
	for _, n := range h.nudges("main") {
		if n.Action == core.NudgeExpire {
			exp = n
		}
	}
	h.clock = exp.NextFireAt
	before := h.out.count()
	if err := h.eng.Nudge(context.Background(), exp, exp.NextFireAt); err != nil {
		t.Fatal(err)
	}
	mustContain(t, joinTexts(h.out.since(before)), `Plan v1 "Slow decision" expired: no decision within 24 h`)
	s := h.session("main")
	if s.Phase != core.PhasePlanning || s.ApprovalID != "" || h.plan(p.ID).Status != core.PlanExpired {
		t.Fatalf("after expiry: phase %s, plan %s", s.Phase, h.plan(p.ID).Status)
	}
	mustContain(t, lastText(h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID})), "already decided (expired by system)")
}

func TestQuestionGetsReminders(t *testing.T) {
	h := newHarness(t, withNudges)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Which?", "options": []string{"A", "B"}})))
	h.say("main", "local", "go")
	ns := h.nudges("main")
	if r, e := active(ns); r != 2 || e != 0 {
		t.Fatalf("question schedules: %d reminders, %d expiries", r, e)
	}
	h.clock = h.clock.Add(10 * time.Minute)
	before := h.out.count()
	if err := h.eng.Nudge(context.Background(), ns[0], ns[0].NextFireAt); err != nil {
		t.Fatal(err)
	}
	rs := h.out.since(before)
	if len(rs) != 1 || len(rs[0].Buttons) != 2 {
		t.Fatalf("question nudge %+v", rs)
	}
	mustContain(t, rs[0].Text, "A question has waited 10 min for an answer: Which?")
	h.say("main", "local", "/plan answer 1")
	if r, _ := active(h.nudges("main")); r != 0 {
		t.Fatal("answering did not cancel the reminders")
	}
}

func TestPlanNudgeCommand(t *testing.T) {
	h := newHarness(t, withNudges)
	nudger := &fakeNudger{}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Out: h.out, Nudger: nudger, Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}}))
	mustContain(t, lastText(h.say("main", "local", "/plan nudge snooze 1h")), "nothing to snooze")
	mustContain(t, lastText(h.say("main", "local", "/plan nudge every 2h")), "Reminders: every 2 h while a decision or answer is pending.")
	h.toPending("main", "Custom cadence")
	ns := h.nudges("main")
	if r, e := active(ns); r != 1 || e != 1 {
		t.Fatalf("with every 2h: %d reminders, %d expiries", r, e)
	}
	for _, n := range ns {
		if n.Action == core.NudgeRemind && (n.Kind != core.NudgeRecurring || !n.NextFireAt.Equal(day.Add(2*time.Hour))) {
			t.Fatalf("recurring schedule %+v", n)
		}
	}
	mustContain(t, lastText(h.say("main", "local", "/plan nudge snooze 3h")), "Snoozed: the next reminder comes at 2026-11-30 12:00 UTC (in 3 h).")
	if r, e := active(h.nudges("main")); r != 1 || e != 1 {
		t.Fatalf("after snooze: %d reminders, %d expiries (the timeout must survive a snooze)", r, e)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan nudge off")), "Reminders are off")
	if r, e := active(h.nudges("main")); r != 0 || e != 1 {
		t.Fatalf("after off: %d reminders, %d expiries", r, e)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "reminders off")
	mustContain(t, lastText(h.say("main", "bob", "/plan nudge every 1h")), "Only local")
	mustContain(t, lastText(h.say("main", "local", "/plan nudge every 500ms")), "shorter than 1s")
	if len(nudger.changed) < 3 {
		t.Fatalf("scheduler told about %d changes", len(nudger.changed))
	}
}

// A cron spec is checked by the scheduler's parser (the NudgeSpecs port): one it refuses
// gets the grammar's usage notice, word for word, and changes nothing; a valid one is
// the session's schedule, with its first time computed by the same parser.
func TestPlanNudgeCronSpec(t *testing.T) {
	h := newHarness(t, withNudges)
	h.say("main", "local", "/plan nudge off")
	before := h.session("main")
	rs := h.say("main", "local", "/plan nudge 0 9 * *")
	want := "`/plan nudge`: \"0 9 * *\" is not a valid cron spec (expected exactly 5 fields, found 4: [0 9 * *]).\n" +
		"Usage: /plan nudge off | snooze <duration> | every <duration> | <cron spec>\n" +
		"e.g. `/plan nudge every 2h` · `/plan nudge snooze 30m` · `/plan nudge \"0 9 * * 1-5\"`"
	if len(rs) != 1 || rs[0].Kind != core.ReplyNotice || rs[0].Text != want {
		t.Fatalf("replies %+v, want one notice %q", rs, want)
	}
	if s := h.session("main"); s.NudgeSpec != before.NudgeSpec || s.Version != before.Version {
		t.Fatalf("a refused spec changed the session: %+v", s)
	}
	rs = h.say("main", "local", "/plan nudge snoze 2h")
	if len(rs) != 1 || rs[0].Kind != core.ReplyNotice || !strings.Contains(rs[0].Text, "Did you mean /plan nudge snooze?") {
		t.Fatalf("misspelt keyword: %+v", rs)
	}
	rs = h.say("main", "local", "/plan nudge CRON_TZ=UTC 0 10 * * *")
	if len(rs) != 1 || rs[0].Kind != core.ReplyText {
		t.Fatalf("valid spec: %+v", rs)
	}
	if s := h.session("main"); s.NudgeSpec != "CRON_TZ=UTC 0 10 * * *" {
		t.Fatalf("NudgeSpec = %q", s.NudgeSpec)
	}
	if ev := h.events("main"); len(ev) == 0 || ev[len(ev)-1] != core.EventNudgeSet {
		t.Fatalf("events %v, want nudge_set last", ev)
	}
	h.toPending("main", "Cron cadence")
	var remind []core.Nudge
	for _, n := range h.nudges("main") {
		if n.Action == core.NudgeRemind && n.Status == core.NudgeActive {
			remind = append(remind, n)
		}
	}
	if len(remind) != 1 || remind[0].Kind != core.NudgeRecurring || !remind[0].NextFireAt.Equal(day.Add(time.Hour)) {
		t.Fatalf("reminders %+v, want one recurring at 10:00 UTC", remind)
	}
}

func TestReportMissed(t *testing.T) {
	h := newHarness(t, withNudges)
	h.toPending("main", "Missed plan")
	n := h.nudges("main")[0]
	before := h.out.count()
	if err := h.eng.ReportMissed(context.Background(), n.SessionID, []core.MissedNudge{{Nudge: n, ScheduledAt: n.NextFireAt}}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, joinTexts(h.out.since(before)), "While plangate was down, 1 reminder was missed (due 2026-11-30 09:10 UTC).", `Plan v1 "Missed plan" is still waiting`)
}
