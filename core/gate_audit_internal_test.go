package core

import "testing"

func TestBlockedNotice(t *testing.T) {
	planning := "nothing may change before a plan is accepted (phase: planning)"
	tests := []struct {
		name string
		in   []blockedCall
		want string
	}{
		{"one", []blockedCall{{"write_file on README.md", planning}},
			"Blocked write_file on README.md: " + planning + "."},
		{"same reason, repeats counted", []blockedCall{{"write_file on a", planning}, {"run_command rm x", planning}, {"write_file on a", planning}},
			"Blocked 3 calls: " + planning + ".\n- write_file on a (2 times)\n- run_command rm x"},
		{"different reasons", []blockedCall{{"write_file on a", "no accepted plan is loaded"}, {"edit_file on ../b", "path escapes the workspace"}},
			"Blocked 2 calls:\n- write_file on a: no accepted plan is loaded\n- edit_file on ../b: path escapes the workspace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := blockedNotice(tc.in); got != tc.want {
				t.Errorf("blockedNotice =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestScopeDiff(t *testing.T) {
	sc := func(allowed []string, forbidden ...string) Scope {
		return Scope{AllowedPaths: allowed, ForbiddenPaths: forbidden}
	}
	tests := []struct {
		name     string
		old, cur Scope
		want     string
	}{
		{"same", sc([]string{"a"}), sc([]string{"a"}), ""},
		{"to the whole workspace", sc([]string{"README.md"}), sc([]string{"**"}), "scope widened: README.md → the whole workspace"},
		{"a path added", sc([]string{"a"}), sc([]string{"a", "b"}), "scope widened: a → a, b"},
		{"a forbidden path dropped", sc([]string{"**"}, "secrets/**"), sc([]string{"**"}), "scope widened: the whole workspace (never secrets/**) → the whole workspace"},
		{"a path removed", sc([]string{"a", "b"}), sc([]string{"a"}), "scope narrowed: a, b → a"},
		{"from nothing", sc(nil), sc([]string{"a"}), "scope widened: no files → a"},
		{"swapped", sc([]string{"a"}, "x"), sc([]string{"b"}, "x"), "scope widened: a (never x) → b (never x)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scopeDiff(tc.old, tc.cur); got != tc.want {
				t.Errorf("scopeDiff = %q, want %q", got, tc.want)
			}
		})
	}
}
