package machine

import (
	"strings"

	"github.com/plangate/plangate/core/plan"
)

// A plan's grants in words: what accepting it lets the agent do beyond reading. Every
// render path says them from PlanGrants, so none can leave a grant out.

// Reach is what this gateway lets a granted command do (tools.run_command): whether
// run_command is offered, and whether a command reaches the network.
type Reach struct {
	Commands bool
	Network  bool
}

// PlanGrants lists every grant of scope s: the files it may change, whether it may run
// commands, the MCP tools that change things it may call (destructive ones marked, as
// destructive reports; nil marks none), and what reaches the network.
func PlanGrants(s plan.Scope, r Reach, destructive func(string) bool) []plan.Grant {
	files := plan.Grant{Kind: plan.GrantFiles, Words: "nothing (" + scopeNoFiles + ")"}
	if len(s.AllowedPaths) > 0 {
		files.Words = plan.ScopeSummary(s)
	}
	files.Short = files.Words
	_, commands := CheckScope(s, ".")
	run := commands && r.Commands
	cmd := plan.Grant{Kind: plan.GrantCommands, Words: "none (only a plan whose scope allows ** and forbids nothing may run them)", Short: "none"}
	switch {
	case run:
		cmd.Words, cmd.Short = "may run the gateway's allowed programs in the workspace (run_command)", "may run programs in the workspace"
	case commands:
		cmd.Words, cmd.Short = "none (the scope would allow them, but run_command is off in this gateway)", "none (run_command is off)"
	}
	tools := plan.Grant{Kind: plan.GrantTools, Words: "none that change things (read-only tools always run)", Short: "none that change things"}
	if n := len(s.AllowedTools); n > 0 {
		names := make([]string, n)
		for i, t := range s.AllowedTools {
			names[i] = t
			if destructive != nil && destructive(t) {
				names[i] += " (destructive)"
			}
		}
		tools.Words = "may call " + strings.Join(names, ", ")
		tools.Short = tools.Words
	}
	net := plan.Grant{Kind: plan.GrantNetwork, Words: "none", Short: "none"}
	switch {
	case run && r.Network:
		net.Words, net.Short = "commands may use it", "commands may use it"
	case run:
		net.Words = "none for commands (their sandbox has no network)"
	}
	if len(s.AllowedTools) > 0 {
		// What an MCP tool reaches is its server's, outside plangate's sandbox.
		net.Words += "; the MCP tools above act through their servers, which may reach it"
		net.Short += "; MCP tools reach what their servers reach"
	}
	gs := []plan.Grant{files, cmd, tools, net}
	if w := s.BudgetWords(); w != "" {
		gs = append(gs, plan.Grant{Kind: plan.GrantBudget, Words: "may change " + w + " in all, counted by plangate from the workspace", Short: "may change " + w})
	}
	if s.Operator != nil {
		w := s.Operator.Words()
		gs = append(gs, plan.Grant{Kind: plan.GrantOperator, Words: w + " (plan_mode.boundary, for every plan)", Short: w})
	}
	return gs
}

// grantLines are a proposal's lines about its grants: what it may change, then the rest
// on one line ("Commands: none · Tools: may call fs__write · Network: none").
func grantLines(s plan.Scope, r Reach, destructive func(string) bool) string {
	gs := PlanGrants(s, r, destructive)
	rest := make([]string, 0, len(gs)-1)
	for _, g := range gs[1:] {
		rest = append(rest, g.Kind+": "+g.Short)
	}
	return gs[0].Kind + ": " + gs[0].Short + "\n" + strings.Join(rest, " · ")
}
