package core

import (
	"time"

	"github.com/plangate/plangate/core/plan"
)

// PlanStatus is the life-cycle state of one plan version. The zero value is not a status.
type PlanStatus string

// Plan statuses.
const (
	PlanPending    PlanStatus = "pending"
	PlanSuperseded PlanStatus = "superseded"
	PlanAccepted   PlanStatus = "accepted"
	PlanRevised    PlanStatus = "revised"
	PlanAbandoned  PlanStatus = "abandoned"
	PlanAborted    PlanStatus = "aborted"
	PlanExpired    PlanStatus = "expired"
	PlanCompleted  PlanStatus = "completed"
)

// Requester is a person whose message a plan version answers.
type Requester struct {
	By   string `json:"by"` // "channel:user id"
	Name string `json:"name,omitempty"`
}

// Plan is one stored plan version.
type Plan struct {
	ID         string // random, e.g. "p7k2m9x4q1"
	SessionID  string
	Version    int
	Status     PlanStatus
	ApprovalID string // single-use id for this version's decision
	Body       plan.Body
	Hash       string // content hash of Body, for re-proposal de-duplication
	File       string // path of the markdown file: plans.dir/<session dir>/<name>
	Decision   *plan.Decision
	Approvals  []plan.Approval // acceptances recorded so far, while more are required
	// Requesters are the people whose messages the planning of this version answered;
	// EditedBy is the person who wrote it by editing the plan file ("channel:user id").
	// Under requester_may_approve: false none of them may accept it.
	Requesters []Requester
	EditedBy   string
	// Changes is what this version changed from the one before, for the "## Changes from
	// vN" section of its file. It is not stored: later rewrites keep the section they find.
	Changes *plan.Diff
	// Run is what plangate recorded while carrying this version out (its stop, ...).
	Run plan.Run
	// Tokens are the model tokens of the calls that planned this version (since the
	// previous version or plan mode's start) and that carried it out. Only
	// Change.PlanTokens adds to them: a plan written in a change keeps the stored count.
	Tokens    plan.Tokens
	CreatedAt time.Time
	UpdatedAt time.Time
}
