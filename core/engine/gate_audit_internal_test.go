package engine

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
