package machine

import (
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// RenderPlanMarkdown renders one plan version as the markdown file posted to the chat,
// with its grants in this gateway's words (r, its reach).
func RenderPlanMarkdown(p core.Plan, phase core.Phase, session string, r Reach) []byte {
	return RenderPlan(p, phase, session, RenderOptions{Reach: r})
}

// RenderPlanMarkdownMarked is RenderPlanMarkdown with the allowed tools that destructive
// reports marked "(destructive)"; plan.ParseMarkdown drops the marks.
func RenderPlanMarkdownMarked(p core.Plan, phase core.Phase, session string, destructive func(tool string) bool, r Reach) []byte {
	return RenderPlan(p, phase, session, RenderOptions{Destructive: destructive, Reach: r})
}

// RenderOptions are the optional parts of a rendering.
type RenderOptions struct {
	Changes     *plan.Diff             // a "## Changes from vN" section
	Destructive func(tool string) bool // allowed tools to mark destructive (nil: none)
	Reach       Reach                  // for the grants' words
}

// RenderPlan renders one plan version as session's file, with o's optional parts.
func RenderPlan(p core.Plan, phase core.Phase, session string, o RenderOptions) []byte {
	return plan.Render(plan.File{
		Body: p.Body, Version: p.Version, Status: string(p.Status), Phase: string(phase), Session: session,
		Changes: o.Changes, Grants: PlanGrants(p.Body.Scope, o.Reach, o.Destructive),
		Approvals: shownApprovals(p), Decision: p.Decision, Footer: planFooter(p.Status),
		Destructive: o.Destructive, Run: p.Run,
	})
}

// shownApprovals are the approvals the file lists: those counted while p is pending, and
// those of more than one person after (one approver is the Decision section's "By").
func shownApprovals(p core.Plan) []plan.Approval {
	if len(p.Approvals) == 0 || p.Status != core.PlanPending && len(p.Approvals) < 2 {
		return nil
	}
	return p.Approvals
}

// planFooter is the file's last line: what a person can do with a version in status st.
func planFooter(st core.PlanStatus) string {
	switch st {
	case core.PlanPending:
		return "Decide in the chat: `/plan accept` · `/plan revise <feedback>` · `/plan auto`\n"
	case core.PlanAccepted:
		return "This plan is being carried out. `/plan revise <feedback>` sends it back for a new version · `/plan status` shows progress\n"
	}
	return fmt.Sprintf("This version is %s. `/plan status` shows where things stand · `/plan help` lists the commands\n",
		plan.EscapeMarkdown(string(st)))
}
