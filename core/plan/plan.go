// Package plan is the plan document: its body, the markdown file plangate writes and
// reads back, what changed between versions, the judge, and the plan tools' arguments.
// It knows nothing of sessions, the engine or the store (docs/design.md §5, §13).
package plan

import "time"

// StepStatus is the status of one plan step. The zero value is not a status.
type StepStatus string

// Step statuses.
const (
	StepPending    StepStatus = "pending"
	StepInProgress StepStatus = "in_progress"
	StepCompleted  StepStatus = "completed"
	StepCancelled  StepStatus = "cancelled"
)

// stepBoxes are the step statuses with their checklist boxes, in the file and in chat
// progress messages.
var stepBoxes = map[StepStatus]string{StepPending: "[ ]", StepInProgress: "[>]", StepCompleted: "[x]", StepCancelled: "[~]"}

// Valid reports whether s is one of the step statuses.
func (s StepStatus) Valid() bool {
	_, ok := stepBoxes[s]
	return ok
}

// Step is one item of a plan.
type Step struct {
	ID                 string     `json:"id"`
	Text               string     `json:"text"`
	Status             StepStatus `json:"status"`
	AcceptanceCriteria []string   `json:"acceptance_criteria,omitempty"`
	VerifiedCriteria   []string   `json:"verified_criteria,omitempty"`
	// CancelReason is why a cancelled step was cancelled (update_plan's explanation).
	CancelReason string `json:"cancel_reason,omitempty"`
}

// Risk is a risk the plan names, with how it is mitigated.
type Risk struct {
	Risk       string `json:"risk"`
	Mitigation string `json:"mitigation"`
}

// RiskLevel is how risky the model judges a whole plan. The zero value means the model
// did not say.
type RiskLevel string

// Risk levels.
const (
	RiskLow    RiskLevel = "low"
	RiskMedium RiskLevel = "medium"
	RiskHigh   RiskLevel = "high"
)

// RiskLevels are the risk levels, lowest first, as the judge and config name them.
var RiskLevels = []RiskLevel{RiskLow, RiskMedium, RiskHigh}

// Valid reports whether r is one of RiskLevels.
func (r RiskLevel) Valid() bool { return r == RiskLow || r == RiskMedium || r == RiskHigh }

// Scope limits what an accepted plan may change: globs relative to the workspace.
type Scope struct {
	AllowedPaths   []string `json:"allowed_paths,omitempty"`
	ForbiddenPaths []string `json:"forbidden_paths,omitempty"`
	// AllowedTools names the mutating MCP tools ("<server>__<tool>") the plan may call
	// (docs/design.md §15); read-only tools need no entry.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// MaxFilesChanged and MaxLinesChanged are the plan's budget: how many files, and how
	// many lines (added plus removed), the execution may change in all, counted by
	// plangate from the workspace itself; 0 is no limit.
	MaxFilesChanged int `json:"max_files_changed,omitempty"`
	MaxLinesChanged int `json:"max_lines_changed,omitempty"`
	// Operator is the operator's boundary the plan inherited when it was proposed
	// (Inherit): its forbidden paths are among ForbiddenPaths and its budgets fill the
	// ones the plan left out; nil when there was none. The model cannot set it.
	Operator *Boundary `json:"operator_limits,omitempty"`
}

// Decision records who decided on a plan version, when, where and with what feedback.
type Decision struct {
	By       string    `json:"by"`
	ByName   string    `json:"by_name,omitempty"`
	At       time.Time `json:"at"`
	Channel  string    `json:"channel"`
	Outcome  string    `json:"outcome"` // accepted, auto_accepted, revised, abandoned, aborted, expired
	Feedback string    `json:"feedback,omitempty"`
	// Stale is what had changed in the workspace since the version was proposed when a
	// person accepted it anyway (/plan accept --stale), in words.
	Stale string `json:"stale,omitempty"`
}

// Body is what the model proposes; it is stored as JSON and hashed.
type Body struct {
	Title   string `json:"title"`
	Summary string `json:"summary,omitempty"`
	// ExpectedOutcome is what is true once the plan is done, in the model's words.
	ExpectedOutcome string `json:"expected_outcome,omitempty"`
	Steps           []Step `json:"steps"`
	// NonGoals are what the plan deliberately leaves alone.
	NonGoals []string `json:"non_goals,omitempty"`
	// Risk is the plan's overall risk level; Risks are the single risks it names.
	Risk        RiskLevel `json:"risk,omitempty"`
	Assumptions []string  `json:"assumptions,omitempty"`
	Risks       []Risk    `json:"risks,omitempty"`
	// Verification lists checks in words and commands plangate runs before it calls the
	// plan completed (Check).
	Verification []Check  `json:"verification,omitempty"`
	Scope        Scope    `json:"scope,omitzero"`
	References   []string `json:"references,omitempty"`
	// Spec is the product spec a short goal is expanded into first (plan_mode.planner
	// expand_short_goals); nil for an ordinary plan.
	Spec *ProductSpec `json:"spec,omitempty"`
}

// ProductSpec describes the product a plan builds, before its steps (docs/design.md §13).
type ProductSpec struct {
	Overview        string    `json:"overview,omitempty"`
	Features        []Feature `json:"features,omitempty"`
	UserStories     []string  `json:"user_stories,omitempty"`
	TechStack       []string  `json:"tech_stack,omitempty"`
	DesignDirection string    `json:"design_direction,omitempty"`
}

// Feature is one feature of a product spec, with its priority (high, medium, low) and its
// complexity (small, medium, large).
type Feature struct {
	Name       string `json:"name"`
	Priority   string `json:"priority"`
	Complexity string `json:"complexity"`
}

// Approval is one person's acceptance of a plan version; a policy may need several
// (docs/design.md §12). They are kept on the plan, outside the hashed body.
type Approval struct {
	By      string    `json:"by"`
	ByName  string    `json:"by_name,omitempty"`
	At      time.Time `json:"at"`
	Version int       `json:"version"`
}

// Grant is one kind of grant in words: Words for the plan file and the card, Short for
// the proposal's chat line.
type Grant struct {
	Kind  string
	Words string
	Short string
}

// The kinds of grant, in the order they are listed.
const (
	GrantFiles    = "May change"
	GrantCommands = "Commands"
	GrantTools    = "Tools"
	GrantNetwork  = "Network"
	GrantBudget   = "Budget"
	GrantOperator = "Operator limits"
)
