package core

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core/plan"
)

func TestInScope(t *testing.T) {
	for _, tc := range []struct {
		scope plan.Scope
		path  string
		ok    bool
	}{
		{plan.Scope{}, "anything/at/all.go", false}, // a plan without a scope changes nothing
		{plan.Scope{AllowedPaths: []string{"README.md"}}, "README.md", true},
		{plan.Scope{AllowedPaths: []string{"README.md"}}, "./README.md", true},
		{plan.Scope{AllowedPaths: []string{"README.md"}}, "docs/a.md", false},
		{plan.Scope{AllowedPaths: []string{"docs/**"}}, "docs/a/b.md", true},
		{plan.Scope{AllowedPaths: []string{"docs"}}, "docs/a.md", true},
		{plan.Scope{AllowedPaths: []string{"docs/*.md"}}, "docs/a.md", true},
		{plan.Scope{AllowedPaths: []string{"docs/*.md"}}, "docs/x/a.md", false},
		{plan.Scope{ForbiddenPaths: []string{"secrets/**"}}, "secrets/key", false},
		{plan.Scope{ForbiddenPaths: []string{"secrets/**"}}, "src/main.go", false},
		// "." stands for a command that may touch anything.
		{plan.Scope{}, ".", false},
		{plan.Scope{AllowedPaths: []string{"README.md"}}, ".", false},
		{plan.Scope{AllowedPaths: []string{"**"}}, ".", true},
		{plan.Scope{AllowedPaths: []string{"**"}}, "deep/down/file.go", true},
		{plan.Scope{AllowedPaths: []string{"."}}, "deep/down/file.go", false}, // "." is not a pattern; "**" is the whole workspace
		{plan.Scope{ForbiddenPaths: []string{"secrets/**"}}, ".", false},
	} {
		if _, ok := inScope(tc.scope, tc.path); ok != tc.ok {
			t.Errorf("inScope(%+v, %q) = %v, want %v", tc.scope, tc.path, ok, tc.ok)
		}
	}
}

func TestTrimHistoryAndTruncate(t *testing.T) {
	h := []ChatMessage{{Content: "aaaaaaaaaa"}, {Content: "bbbbbbbbbb"}, {Content: "cccccccccc"}}
	if got := trimHistory(h, 25); len(got) != 2 || got[0].Content != "bbbbbbbbbb" {
		t.Errorf("trimHistory(25) = %v", got)
	}
	if got := trimHistory(h, 5); len(got) != 1 || got[0].Content != "cccccccccc" {
		t.Errorf("trimHistory keeps the newest entry: %v", got)
	}
	if got := trimHistory(h, 1000); len(got) != 3 {
		t.Errorf("trimHistory(1000) dropped entries: %v", got)
	}
	long := "héllo wörld, " + string(make([]byte, 100))
	got := truncateResult(long, 2)
	if got[:1] != "h" || !strings.Contains(got, "[truncated: showing 1 of") {
		t.Errorf("truncateResult = %q", got)
	}
	if truncateResult("short", 10) != "short" {
		t.Error("short result changed")
	}
}

func TestAddressDirIsDistinctAndSafe(t *testing.T) {
	addrs := []Address{
		{Channel: "terminal", Account: "local", Chat: "main"},
		{Channel: "terminal", Account: "local", Chat: "a b"},
		{Channel: "terminal", Account: "local", Chat: "a_b"},
		{Channel: "terminal", Account: "local", Chat: "../etc"},
		{Channel: "terminal", Account: "local", Chat: ".."},
		{Channel: "telegram", Account: "111", Chat: "-1001"},
		{Channel: "telegram", Account: "222", Chat: "-1001"},
		{Channel: "slack", Account: "T1", Chat: "C1", Thread: "1700000000.0001"},
		{Channel: "slack", Account: "T1", Chat: "C1", Thread: "1700000000_0001"},
	}
	seen := map[string]Address{}
	for _, a := range addrs {
		d := a.Dir()
		if d == "" || d == "." || d == ".." || strings.ContainsAny(d, `/\:`) {
			t.Errorf("%+v: unsafe dir %q", a, d)
		}
		if prev, dup := seen[d]; dup {
			t.Errorf("%+v and %+v share dir %q", prev, a, d)
		}
		seen[d] = a
	}
	if got := (Address{Channel: "terminal", Account: "local", Chat: "main"}).Dir(); got != "main" {
		t.Errorf("the terminal's main session dir is %q, want main", got)
	}
}

// TestMayDecideAdminFlag: only the Admin flag (set by the admin API) grants an admin's
// authority; a sender id that looks like an admin's does not.
func TestMayDecideAdminFlag(t *testing.T) {
	s := Session{Owner: "U1"}
	approvers := []string{"slack:U9"}
	addr := Address{Channel: "slack", Account: "T", Chat: "C"}
	admin := Message{Address: addr, Sender: Person{ID: "admin:ops", Admin: true}}
	fake := Message{Address: addr, Sender: Person{ID: "admin:ops"}}
	if !mayDecide(approvers, commands.Approver, s, admin) || !mayDecide(nil, commands.Approver, s, admin) {
		t.Fatal("the admin API's operator may not decide")
	}
	if mayDecide(approvers, commands.Approver, s, fake) {
		t.Fatal("a person whose id starts with admin: decides as an admin")
	}
}
