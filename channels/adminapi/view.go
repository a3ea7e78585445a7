package adminapi

import (
	"context"
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// The JSON views of sessions, plans and audit rows. They are the documented shapes of
// `plangate sessions show --json` and `plangate plans show --json` (docs/design.md §9);
// the CLI uses these same types, so the admin API and the CLI cannot drift apart.

// timeFormat is how every time is written: UTC, RFC 3339 without fractions.
const timeFormat = "2006-01-02T15:04:05Z07:00"

// SessionJSON is one session with its current plan.
type SessionJSON struct {
	ID              string         `json:"id"`
	Address         AddressJSON    `json:"address"`
	Phase           core.Phase     `json:"phase"`
	AutoApprove     bool           `json:"auto_approve"`
	RejectionCount  int            `json:"rejection_count"`
	Owner           string         `json:"owner"`
	PendingQuestion *core.Question `json:"pending_question"`
	// ApprovalID is the id a decision on the pending plan version carries; "" when none waits.
	ApprovalID string `json:"approval_id"`
	// Approvals are the acceptances the current plan version has collected (docs/design.md §12);
	// never null.
	Approvals []ApprovalJSON `json:"approvals"`
	// Requesters are the people the current plan version answers (who may not accept it
	// under requester_may_approve: false); never null.
	Requesters []core.Requester `json:"requesters"`
	// Reply is the engine's answer to a change made through the admin API ("Approval
	// recorded ...: 1 of 2 approvals (alice) ..."); empty elsewhere.
	Reply string    `json:"reply,omitempty"`
	Plan  *PlanJSON `json:"plan"`
	// Stop is why the execution of the current (accepted) plan version is stopped now and
	// waits for a person; omitted while it runs or when no plan executes.
	Stop *plan.Stop `json:"stop,omitempty"`
	// Report is the current plan version's report, made when it last completed or
	// stopped; omitted before that.
	Report *plan.Report `json:"report,omitempty"`
	// Undo is the /plan undo of the current plan version: who, when and the files put
	// back; omitted when it was not undone.
	Undo *plan.Undone `json:"undo,omitempty"`
	// Tokens are the model tokens of the session's calls: all, today's and the planning
	// no version holds yet.
	Tokens    core.SessionTokens `json:"tokens"`
	Version   int64              `json:"version"`
	CreatedAt string             `json:"created_at"`
	UpdatedAt string             `json:"updated_at"`
}

// ApprovalJSON is one recorded acceptance of a plan version.
type ApprovalJSON struct {
	By      string `json:"by"` // "channel:user id", or "admin:<name>"
	Name    string `json:"name,omitempty"`
	Version int    `json:"version"`
	At      string `json:"at"`
}

// AddressJSON is a session's address.
type AddressJSON struct {
	Channel string `json:"channel"`
	Account string `json:"account"`
	Chat    string `json:"chat"`
	Thread  string `json:"thread"`
}

// PlanJSON is one plan in `plans list --json` and inside a session.
type PlanJSON struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	Version   int             `json:"version"`
	Status    core.PlanStatus `json:"status"`
	Title     string          `json:"title"`
	File      string          `json:"file"`
	Steps     []plan.Step     `json:"steps,omitempty"`
}

// PlanDetailJSON is one plan with its body and decision (`plans show --json`).
type PlanDetailJSON struct {
	PlanJSON
	Body     plan.Body      `json:"body"`
	Decision *plan.Decision `json:"decision"`
	// Run is what plangate recorded while carrying the version out (the workspace's
	// fingerprint at proposal, the changes counted against the budget, the verification
	// runs, a stop); omitted when nothing is.
	Run plan.Run `json:"run,omitzero"`
	// Tokens are the model tokens of the calls that planned and carried out the version.
	Tokens  plan.Tokens `json:"tokens"`
	Created string      `json:"created_at"`
}

// EventJSON is one audit row.
type EventJSON struct {
	ID          int64          `json:"id"`
	SessionID   string         `json:"session_id"`
	PlanID      string         `json:"plan_id"`
	PlanVersion int            `json:"plan_version"`
	Kind        core.EventKind `json:"kind"`
	Actor       core.Actor     `json:"actor"` // "person:U1", "admin:ops", "rule:auto", "agent", "system"
	Channel     string         `json:"channel"`
	Detail      string         `json:"detail"`
	At          string         `json:"at"`
}

// ToPlanJSON is p's list view; withSteps adds the steps (never null then).
func ToPlanJSON(p core.Plan, withSteps bool) PlanJSON {
	j := PlanJSON{ID: p.ID, SessionID: p.SessionID, Version: p.Version, Status: p.Status, Title: p.Body.Title, File: p.File}
	if withSteps {
		j.Steps = p.Body.Steps
		if j.Steps == nil {
			j.Steps = []plan.Step{}
		}
	}
	return j
}

// ToPlanDetail is p's full view.
func ToPlanDetail(p core.Plan) PlanDetailJSON {
	return PlanDetailJSON{PlanJSON: ToPlanJSON(p, true), Body: p.Body, Decision: p.Decision, Run: p.Run, Tokens: p.Tokens, Created: p.CreatedAt.UTC().Format(timeFormat)}
}

// SessionView is s with its current plan loaded from st.
func SessionView(ctx context.Context, st Store, s core.Session) (SessionJSON, error) {
	j := SessionJSON{
		ID: s.ID, Address: AddressJSON(s.Address), Phase: s.Phase, AutoApprove: s.AutoApprove,
		RejectionCount: s.RejectionCount, Owner: s.Owner, PendingQuestion: s.Question, ApprovalID: s.ApprovalID, Version: s.Version,
		CreatedAt: s.CreatedAt.UTC().Format(timeFormat), UpdatedAt: s.UpdatedAt.UTC().Format(timeFormat),
		Approvals: []ApprovalJSON{}, Requesters: []core.Requester{}, Tokens: s.Tokens,
	}
	if s.PlanID != "" {
		p, err := st.Plan(ctx, s.PlanID)
		if err != nil {
			return j, fmt.Errorf("loading plan %s: %w", s.PlanID, err)
		}
		for _, a := range p.Approvals {
			j.Approvals = append(j.Approvals, ApprovalJSON{By: a.By, Name: a.ByName, Version: a.Version, At: a.At.UTC().Format(timeFormat)})
		}
		if p.Requesters != nil {
			j.Requesters = p.Requesters
		}
		pj := ToPlanJSON(p, true)
		j.Plan = &pj
		if p.Status == core.PlanAccepted {
			j.Stop = p.Run.Stop
		}
		j.Report = p.Run.Report
		j.Undo = p.Run.Undone
	}
	return j, nil
}

// ToEventJSON is e's view.
func ToEventJSON(e core.Event) EventJSON {
	return EventJSON{ID: e.ID, SessionID: e.SessionID, PlanID: e.PlanID, PlanVersion: e.PlanVersion, Kind: e.Kind,
		Actor: e.Actor, Channel: e.Channel, Detail: e.Detail, At: e.At.UTC().Format(timeFormat)}
}
