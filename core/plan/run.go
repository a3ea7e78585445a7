package plan

import "time"

// Run is what plangate itself records about a plan version while it is carried out, kept
// beside the body the model proposed: it is not hashed, and no tool of the model writes it.
type Run struct {
	// Stop is why the execution of this version stopped and waits for a person; nil while
	// it runs, before it starts and once it completed.
	Stop *Stop `json:"stop,omitempty"`
	// Verification is what plangate recorded of running the version's command checks;
	// nil until it first ran them.
	Verification *Verification `json:"verification,omitempty"`
}

// IsZero reports whether nothing is recorded (the store keeps NULL then).
func (r Run) IsZero() bool { return r.Stop == nil && r.Verification == nil }

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
)

// Stop is one stop of an executing plan: its kind, the notice the chat got, and when.
type Stop struct {
	Kind    StopKind  `json:"kind"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}
