package machine

import (
	"cmp"
	"encoding/base32"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Rules are the configuration a transition depends on.
type Rules struct {
	PlanMode        bool
	StartInPlan     bool
	Nudges          []time.Duration // one-shot reminders (plan_mode.nudges)
	ApprovalTimeout time.Duration
	PlansDir        string // where plan files go; Apply only computes their paths
	// WorkspaceCopy: accepted plans get workspace_copy effects (plan_mode.workspace_copy).
	WorkspaceCopy bool
	// Specs evaluates recurring reminder specs; nil makes them unavailable.
	Specs NudgeSpecs
	// Policies are access.policies (docs/design.md §12): the first that matches the session
	// says how many distinct approvers a version needs and whether its requester may be one.
	Policies []Policy
	// EditHints say, per channel name, how an edited plan file is sent back there.
	EditHints map[string]string
	// Approvers is access.approvers, the list where no policy has its own.
	Approvers []string
	// AutoRules are plan_mode.auto_approve_rules.
	AutoRules []ApproveRule
	// Reach and Destructive (the MCP tools marked destructive; nil: none) word a
	// proposal's grants (PlanGrants).
	Reach       Reach
	Destructive func(tool string) bool
	// CheckArgv says why a plan's command check could not run here (the run_command
	// rules: an allowed program, found); nil: commands cannot run at all.
	CheckArgv func(argv []string) error
	// MaxVerifierRetries is how many failed verification attempts go back to the agent
	// before the turn stops (retry_policy.max_verifier_retries).
	MaxVerifierRetries int
	// Boundary is plan_mode.boundary: a proposal or edit that widens it is refused
	// (Widens), and every version carries it in its scope (plan.Inherit).
	Boundary plan.Boundary
}

// NewIDs are fresh random ids the caller draws (DrawIDs); Apply uses the ones it needs.
type NewIDs struct {
	Plan, Approval, Question string
}

// Input is everything Apply needs besides the session and its current plan, as data.
type Input struct {
	Now   time.Time
	Actor core.Actor
	Name  string // the actor's display name, for replies ("accepted by alice")
	Rules Rules
	IDs   NewIDs

	// ApprovalID is the approval (or question) id a button carries; "" when typed.
	ApprovalID string
	// Version is the N of "/plan accept vN"; 0 if not given.
	Version int
	// SeenApproval is the approval id that was pending when the person's message arrived
	// (see job.seenApproval): a bare accept only takes that version.
	SeenApproval *string
	// Ref is the plan that ApprovalID or Version names when it is not the current plan,
	// as the store has it; nil if none was found.
	Ref *core.Plan
	// Text is the trigger's text: the goal, the revise feedback, the answer, the comment.
	Text string
	// Steps are the 1-based step numbers a comment is on (TrigComment).
	Steps []int
	// Args are an agent tool call's arguments (propose, update, ask).
	Args []byte
	// Files are the attachments of the person's message (edit: the edited plan file).
	Files []core.File
	// PlanID and Spec name the schedule that fired (expire): the plan it was made for and
	// its spec, for the audit row.
	PlanID, Spec string
	// MayAnswer: the sender of a plain message may answer the pending question.
	MayAnswer bool
	// AutoHeld, for a proposal while auto-approve is on, says why auto-approve may not
	// take it (no person's message started the turn), so it waits for a person.
	AutoHeld string
	// Unattended, for a proposal, says why no person's message started the turn:
	// auto-approve rules, like auto-approve, take only attended proposals.
	Unattended string
	// Requester ("channel:user id") is whose message started this job ("" for none). A
	// request, a revision or an answer makes them one of the session's Requesters.
	Requester string
	// Asked, for the agent's plan tools, are the people the running job's work answers
	// (its message's author, and the requesters of plan work it carried on, even work
	// completed earlier in the job). Entering plan mode and proposing add them.
	Asked []core.Requester
	// Tree is the workspace's fingerprint now, when the toolbox keeps them: a new version
	// (propose, edit) records it; an accept checks the version's against it. TreeProblem
	// says why it could not be taken, for an accept.
	Tree        *plan.Tree
	TreeProblem string
	// Stale: the approver accepts a version whose workspace changed (/plan accept --stale).
	Stale bool
	// Checks are the runs of the plan's command checks, which the engine makes when an
	// update_plan call would finish the plan (WouldComplete); nil when none ran.
	Checks []plan.CheckRun
}

// who is the actor's name for replies: the display name, else the id.
func (in Input) who() string { return cmp.Or(in.Name, in.Actor.ID) }

// EffectKind names one thing the applier does after (write_file: just before) the commit.
type EffectKind string

// Effect kinds, in the order the applier runs them.
const (
	EffWriteFile     EffectKind = "write_file"      // a new plan version's file, before the commit
	EffRefreshFile   EffectKind = "refresh_file"    // rewrite a plan file after its status or steps changed
	EffWorkspaceCopy EffectKind = "workspace_copy"  // rewrite PLAN.md and PLAN.json in the workspace
	EffNudgesChanged EffectKind = "nudges_changed"  // tell the scheduler to re-read the session
	EffRetire        EffectKind = "retire"          // ReplyDecided: take the buttons off a decided version
	EffApprovals     EffectKind = "approvals"       // ReplyApprovals: show a pending version's approvals on its buttons' message
	EffProgress      EffectKind = "progress"        // the step checklist, edited in place
	EffForget        EffectKind = "forget_progress" // the plan's checklist message is done with
	EffSay           EffectKind = "say"             // a reply or notice
	EffReport        EffectKind = "report"          // make, store and post the report of a version that completed
	EffRunTurn       EffectKind = "run_turn"        // start an agent turn
)

func effectRank(k EffectKind) int {
	return slices.Index([]EffectKind{EffWriteFile, EffRefreshFile, EffWorkspaceCopy, EffNudgesChanged, EffRetire, EffApprovals,
		EffProgress, EffForget, EffSay, EffReport, EffRunTurn}, k)
}

// Effect is one piece of work after a commit, as data, for the applier to carry out.
type Effect struct {
	Kind  EffectKind
	Plan  core.Plan  // write_file, refresh_file, workspace_copy, progress, forget_progress, report
	Reply core.Reply // say, retire, progress (To, Kind and Text set; InReplyTo by the applier)
	// OnFail is a notice to send instead when a say cannot be delivered ("" = none).
	OnFail string

	Row int // 1 + the index of the reply's row in Change.Outbox; 0 = sent directly
}

// Refusal is a transition not taken: the reply that says why, and audit rows to record
// (an unauthorized or stale decision). Nothing else changes.
type Refusal struct {
	Text  string
	Audit []core.Event
	// Benign marks a refusal that is no error for the agent (entering plan mode twice).
	Benign bool
}

// ToolReply is what the model is told about a plan tool call.
type ToolReply struct {
	Content string
	EndTurn bool // the turn ends after this call (a plan or question was posted)
	// Error marks a reply that is an error for the model though the call changed
	// something (a failed verification, recorded on the plan).
	Error bool
	// Stop, with StopText (the chat's notice), stops the turn as a stop condition of the
	// executing plan.
	Stop     plan.StopKind
	StopText string
}

// Outcome is the result of Apply: the next session, the Change to commit and the
// effects to run afterwards, or a refusal.
type Outcome struct {
	Trigger Trigger
	Session core.Session // the next session; equal to the input when nothing changes
	Change  core.Change  // Change.Session is set when the session row changes
	Effects []Effect
	Refusal *Refusal
	Tool    *ToolReply // agent triggers: what the model is told

	retired map[string]string // plan id -> how it was decided, for its retire effect
	newPlan string            // id of the plan version this outcome creates
	// copies is Rules.WorkspaceCopy; wasAccepted the plans settled away from accepted.
	copies      bool
	wasAccepted map[string]bool
	before      core.Session
}

// Refused reports whether the transition was not taken.
func (o Outcome) Refused() bool { return o.Refusal != nil }

// EffectKinds lists the kinds of o's effects in order, for tests and logs.
func (o Outcome) EffectKinds() []EffectKind {
	out := make([]EffectKind, 0, len(o.Effects))
	for _, e := range o.Effects {
		out = append(out, e.Kind)
	}
	return out
}

// say queues a reply of kind k with text.
func (o *Outcome) say(k core.ReplyKind, text string) {
	o.Effects = append(o.Effects, Effect{Kind: EffSay, Reply: core.Reply{To: o.before.Address, Kind: k, Text: text}})
}

// sayReply queues a prepared reply, with a notice for when it cannot be delivered.
func (o *Outcome) sayReply(r core.Reply, onFail string) {
	o.Effects = append(o.Effects, Effect{Kind: EffSay, Reply: r, OnFail: onFail})
}

// seal derives the effects every transition implies from what it changes, so no
// transition can forget one (file writes, workspace copies, retired buttons, forgotten
// checklists, scheduler and turn starts), and orders all effects as the applier runs them.
func (o Outcome) seal() Outcome {
	if r := o.Refusal; r != nil {
		o.Session, o.Change, o.Effects = o.before, core.Change{}, nil
		if isAgentTrigger(o.Trigger) {
			content := "error: " + r.Text
			if r.Benign {
				content = r.Text
			}
			o.Tool = &ToolReply{Content: content}
			return o
		}
		if o.before.Version != 0 && len(r.Audit) > 0 {
			// A session that is not stored yet has nothing to audit.
			o.Change = core.Change{SessionID: o.before.ID, Events: r.Audit}
		}
		o.Effects = []Effect{{Kind: EffSay, Reply: core.Reply{To: o.before.Address, Kind: core.ReplyNotice, Text: r.Text}}}
		return o
	}
	// At most four effects per plan and two more: one allocation (an effect is ~0.6 KB).
	o.Effects = slices.Grow(o.Effects, 4*len(o.Change.Plans)+2)
	for _, p := range o.Change.Plans {
		kind := EffRefreshFile
		if p.ID == o.newPlan {
			kind = EffWriteFile
		}
		o.Effects = append(o.Effects, Effect{Kind: kind, Plan: p})
		if o.copiesPlan(p) {
			o.Effects = append(o.Effects, Effect{Kind: EffWorkspaceCopy, Plan: p})
		}
		if how, ok := o.retired[p.ID]; ok && p.ApprovalID != "" {
			o.Effects = append(o.Effects, Effect{Kind: EffRetire, Plan: p, Reply: core.Reply{To: o.before.Address, Kind: core.ReplyDecided,
				Ref: p.ApprovalID, Text: PlanLabel(p) + " — " + how}})
		}
		switch p.Status {
		case core.PlanRevised, core.PlanAborted, core.PlanAbandoned, core.PlanCompleted:
			o.Effects = append(o.Effects, Effect{Kind: EffForget, Plan: p})
		}
		if p.Status == core.PlanCompleted && o.Trigger == TrigComplete {
			o.Effects = append(o.Effects, Effect{Kind: EffReport, Plan: p})
		}
	}
	if ch := o.Change; ch.CancelNudges || ch.CancelReminders || len(ch.Nudges) > 0 {
		o.Effects = append(o.Effects, Effect{Kind: EffNudgesChanged})
	}
	if o.startsTurn() {
		o.Effects = append(o.Effects, Effect{Kind: EffRunTurn})
	}
	slices.SortStableFunc(o.Effects, func(a, b Effect) int { return effectRank(a.Kind) - effectRank(b.Kind) })
	if o.Change.Session != nil || len(o.Change.Events) > 0 || len(o.Change.Plans) > 0 || len(o.Change.Messages) > 0 {
		o.Change.SessionID = o.before.ID
	}
	return o
}

// startsTurn: work a person left for the agent (an injected decision or answer, or a
// message) starts a turn. The agent's own tools never do: its turn is already running.
func (o Outcome) startsTurn() bool {
	if o.Trigger == TrigExpire || isAgentTrigger(o.Trigger) {
		return false
	}
	if len(o.Session.Injections) > 0 && !slices.Equal(o.Session.Injections, o.before.Injections) {
		return true
	}
	for _, m := range o.Change.Messages {
		if m.Role == core.RoleUser {
			return true
		}
	}
	return false
}

func isAgentTrigger(t Trigger) bool {
	switch t {
	case TrigEnter, TrigPropose, TrigAutoPropose, TrigAsk, TrigUpdate, TrigComplete:
		return true
	}
	return false
}

// copiesPlan reports whether a plan the outcome writes gets its workspace copy: one that
// is or was accepted (a revise or abort shows in PLAN.md too), never a pending version.
func (o Outcome) copiesPlan(p core.Plan) bool {
	if !o.copies {
		return false
	}
	switch p.Status {
	case core.PlanAccepted, core.PlanCompleted:
		return true
	}
	return o.wasAccepted[p.ID]
}

// leftAccepted notes that plan id was the accepted version before this change.
func (o *Outcome) leftAccepted(id string) {
	if o.wasAccepted == nil {
		o.wasAccepted = map[string]bool{}
	}
	o.wasAccepted[id] = true
}

// DrawIDs draws the fresh ids trigger tr may need: a plan id and its approval id for a
// proposal or an edited plan, a question id for a question.
func DrawIDs(r io.Reader, tr Trigger) (NewIDs, error) {
	var ids NewIDs
	var err error
	switch tr {
	case TrigPropose, TrigAutoPropose, TrigEdit:
		if ids.Plan, err = NewID(r, 6); err == nil {
			ids.Plan = "p" + ids.Plan
			ids.Approval, err = NewID(r, 10)
		}
	case TrigAsk:
		ids.Question, err = NewID(r, 8)
	}
	return ids, err
}

// NewID returns n random bytes as lower-case base32 without padding.
func NewID(r io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}
