package engine_test

import (
	"context"
	"os"
	"testing"

	"github.com/plangate/plangate/core/machine"
)

// TestProposalSaysEveryGrant: the proposal's message (the text every channel shows with
// its Accept button) and the plan file on disk name every grant of the plan in words: the files, the MCP tools that change things (destructive ones
// marked), commands and the network. A plan that granted a writing MCP tool once said
// only "May change: README.md".
func TestProposalSaysEveryGrant(t *testing.T) {
	for _, c := range []struct {
		name  string
		scope map[string]any
		reach machine.Reach
		chat  string // the proposal's grant lines
		file  string // the plan file's Grants section
	}{
		{
			name:  "files and mcp tools",
			scope: map[string]any{"allowed_paths": []string{"README.md"}, "allowed_tools": []string{"ts__write", "ts__wipe"}},
			chat: "\nMay change: README.md\nCommands: none · Tools: may call ts__write, ts__wipe (destructive) · " +
				"Network: none; MCP tools reach what their servers reach\n",
			file: "\n## Grants\n\n- May change: README.md\n" +
				"- Commands: none (only a plan whose scope allows \\*\\* and forbids nothing may run them)\n" +
				"- Tools: may call ts\\_\\_write, ts\\_\\_wipe (destructive)\n" +
				"- Network: none; the MCP tools above act through their servers, which may reach it\n",
		},
		{
			name:  "commands with the network",
			scope: map[string]any{"allowed_paths": []string{"**"}},
			reach: machine.Reach{Commands: true, Network: true},
			chat:  "\nMay change: the whole workspace\nCommands: may run programs in the workspace · Tools: none that change things · Network: commands may use it\n",
			file: "\n## Grants\n\n- May change: the whole workspace\n" +
				"- Commands: may run the gateway's allowed programs in the workspace (run_command)\n" +
				"- Tools: none that change things (read-only tools always run)\n- Network: commands may use it\n",
		},
		{
			name:  "commands off in the gateway",
			scope: map[string]any{"allowed_paths": []string{"**"}},
			chat:  "\nCommands: none (run_command is off) · Tools: none that change things · Network: none\n",
			file:  "- Commands: none (the scope would allow them, but run_command is off in this gateway)\n",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := mcpHarness(t)
			h.cfg.Reach = c.reach
			h.open()
			sid := sessionID("main")
			h.say("main", "local", "/plan on")
			h.model.push(sid, calls(call("exit_plan_mode", map[string]any{
				"title": "Grants", "summary": "Use what is granted.", "plan": []stepArg{{Step: "Do it"}}, "scope": c.scope,
			})))
			mustContain(t, joinTexts(h.say("main", "local", "plan it")), c.chat)
			if err := h.eng.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(h.plan(h.session("main").PlanID).File)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, string(data), c.file)
		})
	}
}
