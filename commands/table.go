package commands

import "strings"

// Table returns the command table in display order. Everything user-facing about /plan
// (parsing, help, usage errors, suggestions, platform menus) is generated from these rows.
// A fresh slice is built on every call: callers may modify it.
func Table() []Spec {
	return []Spec{
		{Name: Status, Summary: "show the phase, the plan and what is pending", Who: Anyone},
		{Name: Show, Summary: "re-send the current plan file and its checklist", Who: Anyone},
		{Name: Help, Summary: "list these commands", Who: Anyone},
		{Name: On, Args: "[goal]", Summary: "turn plan mode on, optionally with a goal", Who: Approver},
		{Name: Off, Summary: "turn plan mode off and drop any pending plan", Who: Approver},
		{Name: Accept, Args: "[vN] [--stale]", Summary: "accept the pending plan (--stale: on a changed workspace)", Who: Approver},
		{Name: Revise, Args: "[N[,M]:] [feedback]", Summary: "comment on steps N, M; or send the plan back", Who: Approver},
		{Name: Edit, Args: "[file]", Summary: "make your edited copy of the plan file the next version", Who: Approver},
		{Name: Answer, Args: "<text or option number>", Summary: "answer the agent's question", Who: ApproverOrOwner, ArgRequired: true},
		{Name: Auto, Args: "[on|off]", Summary: "approve plans automatically, or stop", Who: Approver},
		{Name: Undo, Summary: "put back the files the last plan changed", Who: Approver},
		{Name: Nudge, Args: "off | snooze <duration> | every <duration> | <cron spec>", Summary: "change reminders for a pending decision", Who: Approver},
	}
}

// Lookup returns the table row of n.
func Lookup(n Name) (Spec, bool) {
	for _, s := range Table() {
		if s.Name == n {
			return s, true
		}
	}
	return Spec{}, false
}

func usage(s Spec) string {
	if s.Args == "" {
		return "/plan " + string(s.Name)
	}
	return "/plan " + string(s.Name) + " " + s.Args
}

// names lists the subcommands in table order.
func names() []string {
	t := Table()
	out := make([]string, len(t))
	for i, s := range t {
		out[i] = string(s.Name)
	}
	return out
}

// subcommandList is the one-line list appended to "unknown subcommand" replies.
func subcommandList() string {
	return "Subcommands: " + strings.Join(names(), ", ") + ". Try /plan help."
}

// argNoun turns a required-argument synopsis into words for a sentence:
// "<text or option number>" -> "text or option number".
func argNoun(s Spec) string {
	return strings.Trim(s.Args, "<>[]")
}

// whoLabel is the help text's note on who may run a subcommand; "" for anyone.
func whoLabel(w Who) string {
	switch w {
	case Approver:
		return "approvers"
	case ApproverOrOwner:
		return "approvers or the session owner"
	default:
		return ""
	}
}
