package core

import (
	"fmt"

	"github.com/plangate/plangate/core/plan"
)

// RenderPlanMarkdown renders one plan version as the markdown file posted to the chat
// (plan.Render): its body, the version's status and decision, and its grants in this
// gateway's words (r, its reach). plan.ParseMarkdown reads the body back.
func RenderPlanMarkdown(p Plan, phase Phase, session string, r Reach) []byte {
	return renderPlan(p, phase, session, renderOpts{reach: r})
}

// RenderPlanMarkdownMarked is RenderPlanMarkdown with the tools of scope.allowed_tools
// that destructive reports marked "(destructive)" (MCP's destructiveHint). The mark is
// the gateway's knowledge, not the plan's: plan.ParseMarkdown drops it, so an edited file
// with marks reads back the same plan.
func RenderPlanMarkdownMarked(p Plan, phase Phase, session string, destructive func(tool string) bool, r Reach) []byte {
	return renderPlan(p, phase, session, renderOpts{destructive: destructive, reach: r})
}

// renderOpts are the optional parts of a rendering.
type renderOpts struct {
	changes     *plan.Diff             // a "## Changes from vN" section
	destructive func(tool string) bool // allowed tools to mark destructive (nil: none)
	reach       Reach                  // for the grants' words
}

func renderPlan(p Plan, phase Phase, session string, o renderOpts) []byte {
	return plan.Render(plan.File{
		Body: p.Body, Version: p.Version, Status: string(p.Status), Phase: string(phase), Session: session,
		Changes: o.changes, Grants: PlanGrants(p.Body.Scope, o.reach, o.destructive),
		Approvals: shownApprovals(p), Decision: p.Decision, Footer: planFooter(p.Status),
		Destructive: o.destructive,
	})
}

// shownApprovals are the approvals the file lists: while p is pending (the approvals
// counted so far under an N-of-M policy) and once accepted by more than one person. A
// single approver's acceptance is the Decision section's "By" already.
func shownApprovals(p Plan) []plan.Approval {
	if len(p.Approvals) == 0 || p.Status != PlanPending && len(p.Approvals) < 2 {
		return nil
	}
	return p.Approvals
}

// planFooter is the file's last line: what a person can do with a version in status st.
func planFooter(st PlanStatus) string {
	switch st {
	case PlanPending:
		return "Decide in the chat: `/plan accept` · `/plan revise <feedback>` · `/plan auto`\n"
	case PlanAccepted:
		return "This plan is being carried out. `/plan revise <feedback>` sends it back for a new version · `/plan status` shows progress\n"
	}
	return fmt.Sprintf("This version is %s. `/plan status` shows where things stand · `/plan help` lists the commands\n",
		plan.EscapeMarkdown(string(st)))
}
