package commands

import "strings"

// MenuEntry is one command for a platform's command menu (Telegram setMyCommands, Discord
// application commands, Slack slash commands).
type MenuEntry struct {
	Command     string // without the slash: "plan"
	Description string
}

// HelpText is the reply to /plan help: one line per table row, short enough for one screen.
func HelpText() string {
	var b strings.Builder
	b.WriteString("/plan commands (a bare /plan is /plan status):\n")
	for _, s := range Table() {
		b.WriteString(usage(s) + " — " + s.Summary)
		if w := whoLabel(s.Who); w != "" {
			b.WriteString(" (" + w + ")")
		}
		b.WriteString("\n")
	}
	b.WriteString("/plan revise 2: <comment> (or 2,4: …) records a comment on those steps of the pending plan and waits, so several can be given; /plan revise [feedback] without step numbers sends the plan back with every comment.\n")
	b.WriteString("Where the chat has buttons (Accept, Revise, Auto; Undo on a report), they do the same.")
	return b.String()
}

// MenuEntries lists the commands for platform menus. Descriptions stay under Discord's
// 100-character limit, the strictest of the platforms (Telegram allows 256).
func MenuEntries() []MenuEntry {
	return []MenuEntry{{
		Command:     strings.TrimPrefix(prefix, "/"),
		Description: "Plan mode: " + strings.Join(names(), ", "),
	}}
}
