package core

import (
	"time"

	"github.com/plangate/plangate/core/plan"
)

// Phase is a session's place in the plan cycle. The zero value is not a phase.
type Phase string

// The phases, named exactly as /plan status shows them.
const (
	PhaseOff              Phase = "off"
	PhasePlanning         Phase = "planning"
	PhaseAwaitingApproval Phase = "awaiting_approval"
	PhaseExecuting        Phase = "executing"
)

// Valid reports whether p is one of the four phases.
func (p Phase) Valid() bool {
	switch p {
	case PhaseOff, PhasePlanning, PhaseAwaitingApproval, PhaseExecuting:
		return true
	}
	return false
}

// Question is a pending ask_user_question.
type Question struct {
	// ID is random: answer buttons carry it (Action.ApprovalID), so a button of an older
	// question cannot answer a newer one.
	ID            string    `json:"id,omitempty"`
	Text          string    `json:"text"`
	Options       []string  `json:"options"`
	AllowFreeText bool      `json:"allow_freetext,omitempty"`
	AskedAt       time.Time `json:"asked_at"`
}

// InjectionKind tags a message queued for the agent's next turn.
type InjectionKind string

// Injection kinds, with the markers the model sees (a person's message has none).
const (
	InjectDecision InjectionKind = "PLAN_DECISION"
	InjectAnswer   InjectionKind = "QUESTION_ANSWER"
	InjectComplete InjectionKind = "PLAN_COMPLETE"
	// InjectMessage is a person's text for the agent that arrived while another process
	// held the session's lease: it enters the transcript when the holder's turn takes it,
	// after the answer that turn was giving, so every answer follows what its model call saw.
	InjectMessage InjectionKind = "MESSAGE"
)

// Injection is a message queued on the session and drained into the next turn: a
// decision, an answer, a completion notice no person typed, or a person's message
// (InjectMessage, with the person's name).
type Injection struct {
	Kind InjectionKind `json:"kind"`
	Text string        `json:"text"`
	Name string        `json:"name,omitempty"`
}

// Session is the persisted state of one conversation.
type Session struct {
	ID             string
	Address        Address
	Phase          Phase
	AutoApprove    bool
	Owner          string // sender id of the user who started the session
	PlanID         string // current plan ("" if none yet)
	ApprovalID     string // approval id of the pending version ("" unless awaiting_approval)
	RejectionCount int
	LastFeedback   string
	// NudgeSpec is the session's own reminder schedule, set by /plan nudge: "" = the
	// configured one-shot nudges, "off" = no reminders, else a cron spec ("@every 2h").
	NudgeSpec string
	// Requesters are the people whose messages the current plan work answers (the request
	// that started the planning, later messages, revisions and answers; while executing,
	// the accepted plan's requesters, never its approvers). Each version proposed carries
	// them as Plan.Requesters. Empty when the session is off.
	Requesters []Requester
	Question   *Question
	Injections []Injection
	// Tokens are the model tokens of the session's calls (engine/tokens.go).
	Tokens    SessionTokens
	Version   int64 // row version for optimistic locking; 0 = not stored yet
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionTokens count the model tokens of a session's calls, written with its row.
type SessionTokens struct {
	// All is every call of the session.
	All plan.Tokens `json:"all"`
	// Today is the calls of Day, a date ("2026-12-07") by the engine's clock in UTC: the
	// count the daily budget (agent.max_tokens_per_session_day) is checked against.
	Day   string      `json:"day,omitempty"`
	Today plan.Tokens `json:"today"`
	// Planning is the calls of the plan work in progress that no version holds yet: the
	// version proposed next takes them over (its Plan.Tokens); ending plan mode drops them.
	Planning plan.Tokens `json:"planning"`
}

// IsZero reports whether nothing was counted (the store keeps NULL then).
func (t SessionTokens) IsZero() bool { return t == SessionTokens{} }

// On is the count of day: Today when it is Day's, else none yet.
func (t SessionTokens) On(day string) plan.Tokens {
	if t.Day != day {
		return plan.Tokens{}
	}
	return t.Today
}

// Add counts u on the session's call of day.
func (t SessionTokens) Add(day string, u plan.Tokens) SessionTokens {
	t.All = t.All.Add(u)
	t.Today, t.Day = t.On(day).Add(u), day
	return t
}
