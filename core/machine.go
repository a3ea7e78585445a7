package core

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
	TrigRevise      Trigger = "revise"       // /plan revise or the Revise button
	TrigAsk         Trigger = "ask"          // agent ask_user_question
	TrigAnswer      Trigger = "answer"       // /plan answer, an option button, or plain text
	TrigAutoOn      Trigger = "auto_on"      // /plan auto [on]
	TrigAutoOff     Trigger = "auto_off"     // /plan auto off
	TrigOff         Trigger = "off"          // /plan off
	TrigExpire      Trigger = "expire"       // plan_mode.approval_timeout passed
	TrigUpdate      Trigger = "update"       // agent update_plan
	TrigComplete    Trigger = "complete"     // every step completed or cancelled
)

// Triggers lists every trigger, for exhaustive tests.
func Triggers() []Trigger {
	return []Trigger{TrigOn, TrigEnter, TrigPropose, TrigAutoPropose, TrigAccept, TrigRevise,
		TrigAsk, TrigAnswer, TrigAutoOn, TrigAutoOff, TrigOff, TrigExpire, TrigUpdate, TrigComplete}
}

// Phases lists every phase, for exhaustive tests.
func Phases() []Phase {
	return []Phase{PhaseOff, PhasePlanning, PhaseAwaitingApproval, PhaseExecuting}
}

type transitionKey struct {
	from Phase
	trig Trigger
}

// transitions is the approval state machine of DESIGN.md section 3. A pair that is not
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
		{PhaseAwaitingApproval, TrigRevise}:      PhasePlanning,
		{PhaseAwaitingApproval, TrigAutoOn}:      PhaseExecuting, // accepts the pending plan
		{PhaseAwaitingApproval, TrigAutoOff}:     PhaseAwaitingApproval,
		{PhaseAwaitingApproval, TrigOff}:         PhaseOff,
		{PhaseAwaitingApproval, TrigExpire}:      PhasePlanning,

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

// Machine answers which transitions are allowed. The zero value is not usable; use
// NewMachine.
type Machine struct {
	table map[transitionKey]Phase
}

// NewMachine returns the approval state machine.
func NewMachine() Machine { return Machine{table: transitions()} }

// Next returns the phase that trigger t leads to from phase p, and false if the
// transition is not allowed.
func (m Machine) Next(p Phase, t Trigger) (Phase, bool) {
	to, ok := m.table[transitionKey{p, t}]
	return to, ok
}
