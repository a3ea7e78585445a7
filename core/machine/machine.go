package machine

import (
	"slices"
	"sync"

	"github.com/plangate/plangate/core"
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
	TrigComment     Trigger = "comment"      // /plan revise 2: <comment>, a step's comment box or the Revise modal's step
)

// Triggers lists every trigger, for exhaustive tests.
func Triggers() []Trigger {
	return []Trigger{TrigOn, TrigEnter, TrigPropose, TrigAutoPropose, TrigAccept, TrigApprove, TrigRevise,
		TrigAsk, TrigAnswer, TrigAutoOn, TrigAutoOff, TrigOff, TrigExpire, TrigUpdate, TrigComplete, TrigEdit, TrigComment}
}

// Phases lists every phase, for exhaustive tests.
func Phases() []core.Phase {
	return []core.Phase{core.PhaseOff, core.PhasePlanning, core.PhaseAwaitingApproval, core.PhaseExecuting}
}

type transitionKey struct {
	from core.Phase
	trig Trigger
}

// transitions is the approval state machine of docs/design.md §3. A pair that is not
// listed is refused, and nothing changes.
func transitions() map[transitionKey]core.Phase {
	return map[transitionKey]core.Phase{
		{core.PhaseOff, TrigOn}:      core.PhasePlanning,
		{core.PhaseOff, TrigEnter}:   core.PhasePlanning,
		{core.PhaseOff, TrigAutoOn}:  core.PhaseOff,
		{core.PhaseOff, TrigAutoOff}: core.PhaseOff,

		{core.PhasePlanning, TrigPropose}:     core.PhaseAwaitingApproval,
		{core.PhasePlanning, TrigAutoPropose}: core.PhaseExecuting,
		{core.PhasePlanning, TrigAsk}:         core.PhasePlanning,
		{core.PhasePlanning, TrigAnswer}:      core.PhasePlanning,
		{core.PhasePlanning, TrigAutoOn}:      core.PhasePlanning,
		{core.PhasePlanning, TrigAutoOff}:     core.PhasePlanning,
		{core.PhasePlanning, TrigUpdate}:      core.PhasePlanning,
		{core.PhasePlanning, TrigOff}:         core.PhaseOff,

		// A new proposal while one is pending supersedes it.
		{core.PhaseAwaitingApproval, TrigPropose}:     core.PhaseAwaitingApproval,
		{core.PhaseAwaitingApproval, TrigAutoPropose}: core.PhaseExecuting,
		{core.PhaseAwaitingApproval, TrigAccept}:      core.PhaseExecuting,
		{core.PhaseAwaitingApproval, TrigApprove}:     core.PhaseAwaitingApproval, // more approvals needed
		{core.PhaseAwaitingApproval, TrigRevise}:      core.PhasePlanning,
		{core.PhaseAwaitingApproval, TrigAutoOn}:      core.PhaseExecuting, // accepts the pending plan
		{core.PhaseAwaitingApproval, TrigAutoOff}:     core.PhaseAwaitingApproval,
		{core.PhaseAwaitingApproval, TrigOff}:         core.PhaseOff,
		{core.PhaseAwaitingApproval, TrigExpire}:      core.PhasePlanning,
		// An edited plan file replaces the pending version with one that waits too.
		{core.PhaseAwaitingApproval, TrigEdit}: core.PhaseAwaitingApproval,
		// A comment on steps waits on the pending version for the next revise.
		{core.PhaseAwaitingApproval, TrigComment}: core.PhaseAwaitingApproval,

		{core.PhaseExecuting, TrigRevise}:   core.PhasePlanning,
		{core.PhaseExecuting, TrigAsk}:      core.PhaseExecuting,
		{core.PhaseExecuting, TrigAnswer}:   core.PhaseExecuting,
		{core.PhaseExecuting, TrigAutoOn}:   core.PhaseExecuting,
		{core.PhaseExecuting, TrigAutoOff}:  core.PhaseExecuting,
		{core.PhaseExecuting, TrigUpdate}:   core.PhaseExecuting,
		{core.PhaseExecuting, TrigComplete}: core.PhaseOff,
		{core.PhaseExecuting, TrigOff}:      core.PhaseOff,
	}
}

// Machine answers which transitions are allowed: the phase a trigger leads to, the
// status it gives a plan version, and the guards it must pass. Use NewMachine.
type Machine struct {
	table  map[transitionKey]core.Phase
	plans  map[planKey]core.PlanStatus
	guards map[Trigger][]Guard
}

// NewMachine returns the approval state machine. Every call shares tables built once,
// which nothing writes (Guards hands out a copy): building them per message is costly.
func NewMachine() Machine { return sharedMachine() }

var sharedMachine = sync.OnceValue(func() Machine {
	return Machine{table: transitions(), plans: planTransitions(), guards: guards()}
})

// Next returns the phase that trigger t leads to from phase p, and false if the
// transition is not allowed.
func (m Machine) Next(p core.Phase, t Trigger) (core.Phase, bool) {
	to, ok := m.table[transitionKey{p, t}]
	return to, ok
}

// Guard names a condition a transition must meet. Apply checks a trigger's guards in
// order; the first that fails refuses it (a timer's is dropped). GuardPhase is the table.
type Guard string

// Guards of the approval state machine.
const (
	GuardPlanMode      Guard = "plan_mode"      // plan_mode.enabled
	GuardPhase         Guard = "phase"          // the phase table allows the trigger
	GuardButton        Guard = "button"         // a button names the pending version
	GuardPending       Guard = "pending"        // a version is pending and the decision names it
	GuardFeedback      Guard = "feedback"       // revise feedback is not empty, or the version has waiting comments
	GuardQuestion      Guard = "question"       // a question is pending (and the button is its)
	GuardOption        Guard = "option"         // the answer is an option, or free text is allowed
	GuardTimer         Guard = "timer"          // the schedule was made for the pending version
	GuardValidPlan     Guard = "valid_plan"     // the proposal parses and the judge accepts it
	GuardValidQuestion Guard = "valid_question" // a question with 2-6 options
	GuardValidUpdate   Guard = "valid_update"   // the step update parses
	GuardEditedFile    Guard = "edited_file"    // an edited plan file of the pending version that parses, passes the judge and changes something
	GuardSteps         Guard = "steps"          // a comment names steps the pending version has, with text, within MaxComments
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
		TrigRevise:      {GuardButton, GuardPending, GuardPhase, GuardFeedback},
		TrigAsk:         {GuardValidQuestion, GuardPhase},
		TrigAnswer:      {GuardQuestion, GuardPhase, GuardOption},
		TrigAutoOn:      {GuardButton, GuardPhase},
		TrigAutoOff:     {GuardButton, GuardPhase},
		TrigOff:         {GuardPhase},
		TrigExpire:      {GuardTimer, GuardPhase},
		TrigUpdate:      {GuardValidUpdate, GuardPhase},
		TrigComplete:    {GuardValidUpdate, GuardPhase},
		TrigEdit:        {GuardPhase, GuardEditedFile},
		TrigComment:     {GuardButton, GuardPending, GuardPhase, GuardSteps},
	}
}

// Guards returns the guards trigger t must pass, in the order Apply checks them.
func (m Machine) Guards(t Trigger) []Guard { return slices.Clone(m.guards[t]) }

type planKey struct {
	from core.PlanStatus
	trig Trigger
}

// planTransitions is the life cycle of one plan version: which status a trigger moves
// it to. "" as the source is the version a proposal creates; the pending one it
// supersedes moves from PlanPending.
func planTransitions() map[planKey]core.PlanStatus {
	return map[planKey]core.PlanStatus{
		{"", TrigPropose}:     core.PlanPending,
		{"", TrigAutoPropose}: core.PlanAccepted,
		{"", TrigEdit}:        core.PlanPending,

		{core.PlanPending, TrigPropose}:     core.PlanSuperseded,
		{core.PlanPending, TrigAutoPropose}: core.PlanSuperseded,
		{core.PlanPending, TrigAccept}:      core.PlanAccepted,
		{core.PlanPending, TrigApprove}:     core.PlanPending, // the approval is recorded on it
		{core.PlanPending, TrigAutoOn}:      core.PlanAccepted,
		{core.PlanPending, TrigRevise}:      core.PlanRevised,
		{core.PlanPending, TrigOff}:         core.PlanAbandoned,
		{core.PlanPending, TrigExpire}:      core.PlanExpired,
		{core.PlanPending, TrigEdit}:        core.PlanSuperseded,
		{core.PlanPending, TrigComment}:     core.PlanPending, // the comment is recorded on it

		{core.PlanAccepted, TrigRevise}:   core.PlanRevised,
		{core.PlanAccepted, TrigOff}:      core.PlanAborted,
		{core.PlanAccepted, TrigUpdate}:   core.PlanAccepted,
		{core.PlanAccepted, TrigComplete}: core.PlanCompleted,
		{core.PlanAccepted, TrigAsk}:      core.PlanAccepted, // it waits for the answer (Run.Stop)
		{core.PlanAccepted, TrigAnswer}:   core.PlanAccepted, // and goes on
	}
}

// PlanNext returns the status trigger t moves a plan version in status s to, and false
// if t does not change such a version.
func (m Machine) PlanNext(s core.PlanStatus, t Trigger) (core.PlanStatus, bool) {
	to, ok := m.plans[planKey{s, t}]
	return to, ok
}
