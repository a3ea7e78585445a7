package core

import (
	"slices"
	"sync"
)

// Trigger is something that may move a session from one phase to another: a person's
// command or button, an agent tool call, or the clock.
type Trigger string

// Triggers of the approval state machine.
const (
	TrigOn          Trigger = "on"           // /plan on
	TrigEnter       Trigger = "enter"        // agent enter_plan_mode
	TrigPropose     Trigger = "propose"      // agent exit_plan_mode with a valid plan
	TrigAutoPropose Trigger = "auto_propose" // the same while auto-approve is on
	TrigAccept      Trigger = "accept"       // /plan accept or the Accept button
	TrigApprove     Trigger = "approve"      // an acceptance counted toward a policy that needs more (docs/design.md §12)
	TrigRevise      Trigger = "revise"       // /plan revise or the Revise button
	TrigAsk         Trigger = "ask"          // agent ask_user_question
	TrigAnswer      Trigger = "answer"       // /plan answer, an option button, or plain text
	TrigAutoOn      Trigger = "auto_on"      // /plan auto [on]
	TrigAutoOff     Trigger = "auto_off"     // /plan auto off
	TrigOff         Trigger = "off"          // /plan off
	TrigExpire      Trigger = "expire"       // plan_mode.approval_timeout passed
	TrigUpdate      Trigger = "update"       // agent update_plan
	TrigComplete    Trigger = "complete"     // every step completed or cancelled
	TrigEdit        Trigger = "edit"         // a person sends an edited copy of the plan file
)

// Triggers lists every trigger, for exhaustive tests.
func Triggers() []Trigger {
	return []Trigger{TrigOn, TrigEnter, TrigPropose, TrigAutoPropose, TrigAccept, TrigApprove, TrigRevise,
		TrigAsk, TrigAnswer, TrigAutoOn, TrigAutoOff, TrigOff, TrigExpire, TrigUpdate, TrigComplete, TrigEdit}
}

// Phases lists every phase, for exhaustive tests.
func Phases() []Phase {
	return []Phase{PhaseOff, PhasePlanning, PhaseAwaitingApproval, PhaseExecuting}
}

type transitionKey struct {
	from Phase
	trig Trigger
}

// transitions is the approval state machine of docs/design.md §3. A pair that is not
// listed is refused, and nothing changes. It is built fresh by a function, so there is no
// package-level mutable state.
func transitions() map[transitionKey]Phase {
	return map[transitionKey]Phase{
		{PhaseOff, TrigOn}:      PhasePlanning,
		{PhaseOff, TrigEnter}:   PhasePlanning,
		{PhaseOff, TrigAutoOn}:  PhaseOff,
		{PhaseOff, TrigAutoOff}: PhaseOff,

		{PhasePlanning, TrigPropose}:     PhaseAwaitingApproval,
		{PhasePlanning, TrigAutoPropose}: PhaseExecuting,
		{PhasePlanning, TrigAsk}:         PhasePlanning,
		{PhasePlanning, TrigAnswer}:      PhasePlanning,
		{PhasePlanning, TrigAutoOn}:      PhasePlanning,
		{PhasePlanning, TrigAutoOff}:     PhasePlanning,
		{PhasePlanning, TrigUpdate}:      PhasePlanning,
		{PhasePlanning, TrigOff}:         PhaseOff,

		// A new proposal while one is pending supersedes it.
		{PhaseAwaitingApproval, TrigPropose}:     PhaseAwaitingApproval,
		{PhaseAwaitingApproval, TrigAutoPropose}: PhaseExecuting,
		{PhaseAwaitingApproval, TrigAccept}:      PhaseExecuting,
		{PhaseAwaitingApproval, TrigApprove}:     PhaseAwaitingApproval, // more approvals needed
		{PhaseAwaitingApproval, TrigRevise}:      PhasePlanning,
		{PhaseAwaitingApproval, TrigAutoOn}:      PhaseExecuting, // accepts the pending plan
		{PhaseAwaitingApproval, TrigAutoOff}:     PhaseAwaitingApproval,
		{PhaseAwaitingApproval, TrigOff}:         PhaseOff,
		{PhaseAwaitingApproval, TrigExpire}:      PhasePlanning,
		// An edited plan file replaces the pending version with one that waits too.
		{PhaseAwaitingApproval, TrigEdit}: PhaseAwaitingApproval,

		{PhaseExecuting, TrigRevise}:   PhasePlanning,
		{PhaseExecuting, TrigAsk}:      PhaseExecuting,
		{PhaseExecuting, TrigAnswer}:   PhaseExecuting,
		{PhaseExecuting, TrigAutoOn}:   PhaseExecuting,
		{PhaseExecuting, TrigAutoOff}:  PhaseExecuting,
		{PhaseExecuting, TrigUpdate}:   PhaseExecuting,
		{PhaseExecuting, TrigComplete}: PhaseOff,
		{PhaseExecuting, TrigOff}:      PhaseOff,
	}
}

// Machine answers which transitions are allowed: the phase a trigger leads to, the
// status it gives a plan version, and the guards it must pass. The zero value is not usable; use
// NewMachine.
type Machine struct {
	table  map[transitionKey]Phase
	plans  map[planKey]PlanStatus
	guards map[Trigger][]Guard
}

// NewMachine returns the approval state machine. Every call returns the same tables,
// built once: nothing writes them after they are built (Guards hands out a copy), and
// building the three maps again for every message was a tenth of the engine's own
// allocations per message.
func NewMachine() Machine { return sharedMachine() }

var sharedMachine = sync.OnceValue(func() Machine {
	return Machine{table: transitions(), plans: planTransitions(), guards: guards()}
})

// Next returns the phase that trigger t leads to from phase p, and false if the
// transition is not allowed.
func (m Machine) Next(p Phase, t Trigger) (Phase, bool) {
	to, ok := m.table[transitionKey{p, t}]
	return to, ok
}

// Guard names a condition a transition must meet. Apply checks the guards of a trigger
// in the order the table lists them, before the transition; the first that fails refuses
// it (or, for a timer, drops it). GuardPhase is the phase table itself.
type Guard string

// Guards of the approval state machine.
const (
	GuardPlanMode      Guard = "plan_mode"      // plan_mode.enabled
	GuardPhase         Guard = "phase"          // the phase table allows the trigger
	GuardButton        Guard = "button"         // a button names the pending version
	GuardPending       Guard = "pending"        // a version is pending and the decision names it
	GuardFeedback      Guard = "feedback"       // revise feedback is not empty
	GuardQuestion      Guard = "question"       // a question is pending (and the button is its)
	GuardOption        Guard = "option"         // the answer is an option, or free text is allowed
	GuardTimer         Guard = "timer"          // the schedule was made for the pending version
	GuardValidPlan     Guard = "valid_plan"     // the proposal parses and the judge accepts it
	GuardValidQuestion Guard = "valid_question" // a question with 2-6 options
	GuardValidUpdate   Guard = "valid_update"   // the step update parses
	GuardEditedFile    Guard = "edited_file"    // an edited plan file of the pending version that parses, passes the judge and changes something
)

// guards lists, per trigger, what Apply checks, in order.
func guards() map[Trigger][]Guard {
	propose := []Guard{GuardPlanMode, GuardPhase, GuardValidPlan}
	return map[Trigger][]Guard{
		TrigOn:          {GuardPlanMode, GuardPhase},
		TrigEnter:       {GuardPlanMode, GuardPhase},
		TrigPropose:     propose,
		TrigAutoPropose: propose,
		TrigAccept:      {GuardButton, GuardPending, GuardPhase},
		TrigApprove:     {GuardButton, GuardPending, GuardPhase},
		TrigRevise:      {GuardFeedback, GuardButton, GuardPending, GuardPhase},
		TrigAsk:         {GuardValidQuestion, GuardPhase},
		TrigAnswer:      {GuardQuestion, GuardPhase, GuardOption},
		TrigAutoOn:      {GuardButton, GuardPhase},
		TrigAutoOff:     {GuardButton, GuardPhase},
		TrigOff:         {GuardPhase},
		TrigExpire:      {GuardTimer, GuardPhase},
		TrigUpdate:      {GuardValidUpdate, GuardPhase},
		TrigComplete:    {GuardValidUpdate, GuardPhase},
		TrigEdit:        {GuardPhase, GuardEditedFile},
	}
}

// Guards returns the guards trigger t must pass, in the order Apply checks them.
func (m Machine) Guards(t Trigger) []Guard { return slices.Clone(m.guards[t]) }

type planKey struct {
	from PlanStatus
	trig Trigger
}

// planTransitions is the life cycle of one plan version: which status a trigger moves
// it to. "" as the source is a version that does not exist yet (a proposal creates it).
// The previous pending version of a new proposal is the one that is superseded.
func planTransitions() map[planKey]PlanStatus {
	return map[planKey]PlanStatus{
		{"", TrigPropose}:     PlanPending,
		{"", TrigAutoPropose}: PlanAccepted,
		{"", TrigEdit}:        PlanPending,

		{PlanPending, TrigPropose}:     PlanSuperseded,
		{PlanPending, TrigAutoPropose}: PlanSuperseded,
		{PlanPending, TrigAccept}:      PlanAccepted,
		{PlanPending, TrigApprove}:     PlanPending, // the approval is recorded on it
		{PlanPending, TrigAutoOn}:      PlanAccepted,
		{PlanPending, TrigRevise}:      PlanRevised,
		{PlanPending, TrigOff}:         PlanAbandoned,
		{PlanPending, TrigExpire}:      PlanExpired,
		{PlanPending, TrigEdit}:        PlanSuperseded,

		{PlanAccepted, TrigRevise}:   PlanRevised,
		{PlanAccepted, TrigOff}:      PlanAborted,
		{PlanAccepted, TrigUpdate}:   PlanAccepted,
		{PlanAccepted, TrigComplete}: PlanCompleted,
	}
}

// PlanNext returns the status trigger t moves a plan version in status s to, and false
// if t does not change such a version.
func (m Machine) PlanNext(s PlanStatus, t Trigger) (PlanStatus, bool) {
	to, ok := m.plans[planKey{s, t}]
	return to, ok
}
