// Package commands is the /plan grammar: one declarative table of subcommands from which the
// parser, /plan help, usage errors with "did you mean" suggestions and platform command menus
// are all generated. It knows nothing about sessions; the core decides what a command does.
package commands

import "time"

// Name is a /plan subcommand. The zero value means "no subcommand".
type Name string

// The subcommands.
const (
	Status Name = "status"
	Show   Name = "show"
	Help   Name = "help"
	On     Name = "on"
	Off    Name = "off"
	Accept Name = "accept"
	Revise Name = "revise"
	Edit   Name = "edit"
	Answer Name = "answer"
	Auto   Name = "auto"
	Nudge  Name = "nudge"
	Undo   Name = "undo"
)

// Who may run a subcommand.
type Who string

// Authorization levels; the core maps them to people.
const (
	Anyone          Who = "anyone"
	Approver        Who = "approver"
	ApproverOrOwner Who = "approver_or_owner"
)

// Spec is one row of the command table.
type Spec struct {
	Name    Name
	Args    string // argument synopsis for help and usage, e.g. "<feedback>"; "" = none
	Summary string // one line for /plan help and platform menus
	Who     Who
	// ArgRequired: the subcommand needs argument text (answer).
	ArgRequired bool
}

// NudgeMode is what a /plan nudge command asks for. The zero value means none.
type NudgeMode string

// Nudge modes.
const (
	NudgeModeOff    NudgeMode = "off"
	NudgeModeSnooze NudgeMode = "snooze"
	NudgeModeEvery  NudgeMode = "every"
	NudgeModeCron   NudgeMode = "cron"
)

// NudgeRequest is a parsed /plan nudge argument. Durations are checked here; whether a
// cron spec is a valid schedule is the scheduler's call (nudges.Specs; see CronRefusal).
type NudgeRequest struct {
	Mode     NudgeMode
	Duration time.Duration // snooze and every (>= 1s)
	Spec     string        // cron: the spec normalized (fields single-spaced, CRON_TZ= prefix upper-cased), quotes removed
	Text     string        // cron: the argument as typed, for CronRefusal
}

// AutoMode is the argument of /plan auto. The zero value means none.
type AutoMode string

// Auto modes; a bare /plan auto means AutoOn.
const (
	AutoOn  AutoMode = "on"
	AutoOff AutoMode = "off"
)

// Command is a parsed /plan command.
type Command struct {
	Name    Name   // Status for a bare /plan
	Args    string // the argument text, trimmed (may span lines for revise and answer)
	Version int    // accept vN: N; 0 = not given
	// Stale: accept --stale, accepting a version whose workspace changed since it was proposed.
	Stale bool
	// Steps are the 1-based step numbers of "/plan revise 2,4: <comment>", in the order
	// typed: the command records a comment on those steps (Args) instead of sending the
	// plan back. Empty for feedback on the whole plan.
	Steps []int
	Auto  AutoMode
	Nudge *NudgeRequest
	Spec  Spec // the table row of Name
}

// ResultKind separates "not a command", "a command" and "a reply to show the user".
type ResultKind int

// Parse results.
const (
	NotCommand ResultKind = iota // ordinary text, or a /plan addressed to another bot
	IsCommand                    // Cmd is set
	IsUsage                      // Reply holds a usage error to show the user
)

// Result is what Parse returns.
type Result struct {
	Kind  ResultKind
	Cmd   Command
	Reply string // for IsUsage: the message to show (markdown, short)
}
