package plan

import "strings"

// RenderPending writes b as a pending version's file, with a grants section about its
// scope as the gateway writes one (the parser skips it) and the tools destructive reports
// marked. Tests of this package and of plan_test share it.
func RenderPending(b Body, destructive func(string) bool) []byte {
	grants := []Grant{{Kind: GrantFiles, Words: ScopeSummary(b.Scope)}, {Kind: GrantCommands, Words: "none"},
		{Kind: GrantTools, Words: "may call " + strings.Join(b.Scope.AllowedTools, ", ")}, {Kind: GrantNetwork, Words: "none"}}
	return Render(File{Body: b, Version: 2, Status: "pending", Phase: "awaiting_approval", Session: "main",
		Grants: grants, Footer: "Decide in the chat: `/plan accept` · `/plan revise <feedback>` · `/plan auto`\n", Destructive: destructive})
}

func renderBody(b Body) []byte { return RenderPending(b, nil) }
