package core

import (
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core/plan"
)

// The decisions Resume, the reminders and the tool-run recheck take, without a store.

func TestResumeTurnDecision(t *testing.T) {
	for _, c := range []struct {
		name                               string
		need, leftover, interrupted, ended bool
		want                               bool
	}{
		{"nothing left", false, false, false, false, false},
		{"killed after the turn ended", false, true, false, true, false},
		{"lease left mid-turn", false, true, false, false, true},
		{"unanswered message", true, false, false, false, true},
		{"interrupted tool run", false, true, true, true, true},
	} {
		if got := resumeTurn(c.need, c.leftover, c.interrupted, c.ended); got != c.want {
			t.Errorf("%s: resumeTurn = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNeedsTurnAndEndedTurn(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	person := []ChatMessage{{Role: RoleUser, Content: "hi", At: now.Add(-time.Minute)}}
	stale := []ChatMessage{{Role: RoleUser, Content: "hi", At: now.Add(-2 * resumeWindow)}}
	answered := []ChatMessage{{Role: RoleAssistant, Content: "hello"}}
	calling := []ChatMessage{{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "read_file"}}}}
	s := Session{Phase: PhaseExecuting}
	if !needsTurn(s, person, now) || needsTurn(s, stale, now) || needsTurn(s, answered, now) {
		t.Error("needsTurn: want true only for a recent unanswered person's message")
	}
	if !needsTurn(Session{Injections: []Injection{{Kind: InjectRestart}}}, answered, now) {
		t.Error("needsTurn: queued injections need a turn")
	}
	if !endedTurn(s, answered) || endedTurn(s, calling) || endedTurn(s, person) {
		t.Error("endedTurn: want true only after the agent's final answer")
	}
	if !endedTurn(Session{Phase: PhaseAwaitingApproval}, calling) {
		t.Error("endedTurn: a session waiting for a decision has ended its turn")
	}
}

func TestRestartNotice(t *testing.T) {
	cur := &Plan{Version: 2, Status: PlanAccepted, Body: plan.Body{Title: "T", Steps: []plan.Step{{Status: plan.StepCompleted}, {Status: plan.StepPending}}}}
	chat, note := restartNotice(Session{Phase: PhaseExecuting}, cur, nil)
	if note == nil || note.Kind != InjectRestart || !strings.Contains(chat.Text, "continuing with step 2") {
		t.Errorf("executing: chat %q, note %+v; want step 2 and a RESTART injection", chat.Text, note)
	}
	chat, note = restartNotice(Session{Phase: PhaseOff}, nil, nil)
	if note != nil || chat.Kind != ReplyNotice {
		t.Errorf("idle: chat %+v, note %+v; want a notice and no injection", chat, note)
	}
}

func TestChangedWhy(t *testing.T) {
	cur := Session{Phase: PhaseExecuting, PlanID: "p1"}
	for _, c := range []struct {
		name string
		s    Session
		p    *Plan
		want string
	}{
		{"unchanged", cur, &Plan{Status: PlanAccepted}, ""},
		{"turned off", Session{Phase: PhaseOff}, nil, "turned off"},
		{"sent back", Session{Phase: PhasePlanning}, nil, "sent back"},
		{"other plan", Session{Phase: PhaseExecuting, PlanID: "p2"}, nil, "another plan"},
		{"plan done", cur, &Plan{Version: 1, Status: PlanCompleted}, "plan v1 is completed"},
	} {
		got := changedWhy(cur, c.s, c.p)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: changedWhy = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestNudgeLineUnknown(t *testing.T) {
	if got := nudgeLine(Session{}, nil, false, time.Time{}); got != "next nudge: unknown" {
		t.Errorf("unreadable schedules: %q", got)
	}
}
