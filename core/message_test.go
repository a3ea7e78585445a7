package core_test

import (
	"testing"

	"github.com/plangate/plangate/core"
)

// Dir names the directory that holds a session's plan files and workspace, so the names
// of existing sessions must never change: these are the directories of the sessions each
// adapter makes (a console's by its session name), with the hashed forms of names that
// are not safe as a file name.
func TestAddressDirIsPinned(t *testing.T) {
	tests := []struct {
		a    core.Address
		want string
	}{
		{core.Address{Channel: "terminal", Account: "local", Chat: "main"}, "main"},
		{core.Address{Channel: "terminal", Account: "local", Chat: "a b"}, "a_b-f4e87913"},
		{core.Address{Channel: "terminal", Account: "local", Chat: "../etc"}, "_etc-ea0ddff6"},
		{core.Address{Channel: "terminal", Account: "local", Chat: ".."}, "session-0df61fc4"},
		{core.Address{Channel: "terminal", Account: "local", Chat: ""}, "session-fb5de25d"},
		{core.Address{Channel: "telegram", Account: "111", Chat: "-1001"}, "telegram-111--1001"},
		{core.Address{Channel: "telegram", Account: "111", Chat: "-1001", Thread: "7"}, "telegram-111--1001-7"},
		{core.Address{Channel: "slack", Account: "T1", Chat: "C1"}, "slack-T1-C1"},
		{core.Address{Channel: "slack", Account: "T1", Chat: "C1", Thread: "1700000000.0001"}, "slack-T1-C1-1700000000.0001"},
		{core.Address{Channel: "discord", Account: "900", Chat: "901"}, "discord-900-901"},
		{core.Address{Channel: "discord", Account: "900", Chat: "901", Thread: "902"}, "discord-900-901-902"},
		{core.Address{Channel: "discord", Account: "", Chat: "903"}, "discord--903"},
		{core.Address{Channel: "web", Account: "alice", Chat: "abc123"}, "web-alice-abc123"},
		{core.Address{Channel: "web", Account: "bob.smith", Chat: "x9"}, "web-bob.smith-x9"},
	}
	for _, tt := range tests {
		t.Run(tt.a.SessionID(), func(t *testing.T) {
			if got := tt.a.Dir(); got != tt.want {
				t.Errorf("Dir() = %q, want %q", got, tt.want)
			}
		})
	}
}
