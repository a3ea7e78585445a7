package plan

import "time"

// Run is what plangate itself records about a plan version while it is carried out, kept
// beside the body the model proposed: it is not hashed, and no tool of the model writes it.
type Run struct {
	// Stop is why the execution of this version stopped and waits for a person; nil while
	// it runs, before it starts and once it completed.
	Stop *Stop `json:"stop,omitempty"`
	// Tree is the workspace's fingerprint when the version was proposed (or edited), which
	// its acceptance is checked against; nil when the toolbox keeps none.
	Tree *Tree `json:"tree,omitempty"`
	// Baseline is the workspace the version was accepted on when that was not Tree (an
	// acceptance with --stale); the execution's changes are counted from it.
	Baseline *Tree `json:"baseline,omitempty"`
	// Changed is what the execution changed so far; nil before its first mutating call.
	Changed *Changed `json:"changed,omitempty"`
	// Verification is what plangate recorded of running the version's command checks;
	// nil until it first ran them.
	Verification *Verification `json:"verification,omitempty"`
	// Escalated is when the pending version was told to plan_mode.escalate_to after its
	// last reminder, and where; nil when it was not.
	Escalated *Escalation `json:"escalated,omitempty"`
	// Report is what the execution did, made when it last completed or stopped; nil
	// before that.
	Report *Report `json:"report,omitempty"`
	// Undone is the /plan undo that put the workspace back as it was at acceptance; nil
	// when the version was not undone.
	Undone *Undone `json:"undo,omitempty"`
	// Comments are people's comments on the version's steps while it was pending, in the
	// order given (see Comment).
	Comments []Comment `json:"comments,omitempty"`
}

// Escalation is a pending version told to people beyond its chat (plan_mode.escalate_to).
type Escalation struct {
	To []string  `json:"to"` // the chats told, as session ids name them ("slack:T1:C0OPS")
	At time.Time `json:"at"`
}

// Changed is what the execution of a version changed in the workspace, counted by
// plangate from fingerprints taken around each mutating call.
type Changed struct {
	// Paths are the files the agent's calls changed (added, changed or removed), in the
	// order first changed; Files is their number and Lines the lines added plus removed in
	// them, from the baseline to the workspace now.
	Paths []string `json:"paths"`
	Files int      `json:"files"`
	Lines int      `json:"lines"`
	// Last is the workspace after the last mutating call, which the next one is compared
	// with: a difference is a change the agent did not make.
	Last *Tree `json:"last,omitempty"`
	// Exceeded is the budget the changes went over (StopMaxFilesChanged or
	// StopMaxLinesChanged); the version's mutating calls are refused from then on.
	Exceeded StopKind `json:"exceeded,omitempty"`
	// Calls are the mutating calls that changed files, each with what it changed and the
	// step in progress then, in order: the report's grouping.
	Calls []CallChange `json:"calls,omitempty"`
	// Outside are the paths found changed outside the agent's calls (a drift), in the
	// order found.
	Outside []string `json:"outside,omitempty"`
}

// Base is the tree the execution's changes are counted from.
func (r Run) Base() *Tree {
	if r.Baseline != nil {
		return r.Baseline
	}
	return r.Tree
}

// Last is the workspace's fingerprint as the last mutating call left it, Base before any.
func (r Run) Last() *Tree {
	if r.Changed != nil && r.Changed.Last != nil {
		return r.Changed.Last
	}
	return r.Base()
}

// IsZero reports whether nothing is recorded (the store keeps NULL then).
func (r Run) IsZero() bool {
	return r.Stop == nil && r.Tree == nil && r.Baseline == nil && r.Changed == nil && r.Verification == nil &&
		r.Escalated == nil && r.Report == nil && r.Undone == nil && len(r.Comments) == 0
}

// StopKind names a stop condition of an executing plan.
type StopKind string

// The stop conditions.
const (
	StopMaxIterations      StopKind = "max_iterations_reached"
	StopRepeatedFailure    StopKind = "repeated_same_failure"
	StopMaxFilesChanged    StopKind = "max_files_changed_exceeded"
	StopMaxLinesChanged    StopKind = "max_lines_changed_exceeded"
	StopForbiddenPath      StopKind = "forbidden_path_touched"
	StopForbiddenTool      StopKind = "forbidden_tool_called" // an MCP tool outside scope.allowed_tools
	StopWorkspaceDrifted   StopKind = "workspace_drifted"
	StopVerificationFailed StopKind = "verification_failed"
	StopDestructiveCommand StopKind = "destructive_command_requested"
	StopSecretDetected     StopKind = "secret_detected"
	StopHumanDecision      StopKind = "requires_human_decision"
	// StopTokenBudget: the version (its planning and execution) used
	// plan_mode.max_tokens_per_plan; StopDailyTokens: the session used
	// agent.max_tokens_per_session_day today.
	StopTokenBudget StopKind = "token_budget_exceeded"
	StopDailyTokens StopKind = "daily_token_budget_exceeded"
)

// Stop is one stop of an executing plan: its kind, the notice the chat got, and when.
type Stop struct {
	Kind    StopKind  `json:"kind"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}
