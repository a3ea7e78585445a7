package commands

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTableRows(t *testing.T) {
	wantOrder := []Name{Status, Show, Help, On, Off, Accept, Revise, Edit, Answer, Auto, Undo, Nudge}
	wantWho := map[Name]Who{Status: Anyone, Show: Anyone, Help: Anyone, Answer: ApproverOrOwner}
	wantArgs := map[Name]string{
		On: "[goal]", Accept: "[vN] [--stale]", Edit: "[file]", Revise: "[N[,M]:] [feedback]", Answer: "<text or option number>",
		Auto: "[on|off]", Nudge: "off | snooze <duration> | every <duration> | <cron spec>",
	}
	table := Table()
	if len(table) != len(wantOrder) {
		t.Fatalf("Table has %d rows, want %d", len(table), len(wantOrder))
	}
	for i, s := range table {
		t.Run(string(s.Name), func(t *testing.T) {
			if s.Name != wantOrder[i] {
				t.Errorf("row %d is %q, want %q", i, s.Name, wantOrder[i])
			}
			who, ok := wantWho[s.Name]
			if !ok {
				who = Approver
			}
			if s.Who != who {
				t.Errorf("Who = %q, want %q", s.Who, who)
			}
			if s.Args != wantArgs[s.Name] {
				t.Errorf("Args = %q, want %q", s.Args, wantArgs[s.Name])
			}
			if wantReq := s.Name == Answer; s.ArgRequired != wantReq {
				t.Errorf("ArgRequired = %v, want %v", s.ArgRequired, wantReq)
			}
			if s.Summary == "" || strings.Contains(s.Summary, "\n") || utf8.RuneCountInString(s.Summary) > 60 {
				t.Errorf("Summary %q must be one short line", s.Summary)
			}
		})
	}
}

func TestTableReturnsCopy(t *testing.T) {
	a := Table()
	a[0].Summary = "changed"
	a[0].Name = "changed"
	b := Table()
	if b[0].Name != Status || b[0].Summary == "changed" {
		t.Errorf("Table() shares its backing array: %+v", b[0])
	}
	if s, ok := Lookup(Status); !ok || s.Summary == "changed" {
		t.Errorf("Lookup sees a caller's modification: %+v", s)
	}
}

func TestLookup(t *testing.T) {
	for _, s := range Table() {
		got, ok := Lookup(s.Name)
		if !ok || got != s {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", s.Name, got, ok, s)
		}
	}
	for _, n := range []Name{"", "ACCEPT", "acept", "plan"} {
		if got, ok := Lookup(n); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", n, got)
		}
	}
}

// UsageOf returns the synopsis of n, e.g. "/plan revise <feedback>", or "" for an unknown name.
func UsageOf(n Name) string {
	s, ok := Lookup(n)
	if !ok {
		return ""
	}
	return usage(s)
}

func TestUsageOf(t *testing.T) {
	tests := map[Name]string{
		Status: "/plan status",
		Revise: "/plan revise [N[,M]:] [feedback]",
		Accept: "/plan accept [vN] [--stale]",
		Answer: "/plan answer <text or option number>",
		"nope": "",
	}
	for n, want := range tests {
		if got := UsageOf(n); got != want {
			t.Errorf("UsageOf(%q) = %q, want %q", n, got, want)
		}
	}
}

func TestHelpText(t *testing.T) {
	help := HelpText()
	lines := strings.Split(help, "\n")
	if len(lines) > 15 {
		t.Errorf("help has %d lines; it must fit one screen", len(lines))
	}
	for _, s := range Table() {
		line := UsageOf(s.Name) + " — " + s.Summary
		idx := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, line) })
		if idx < 0 {
			t.Errorf("help has no line starting %q:\n%s", line, help)
			continue
		}
		if w := whoLabel(s.Who); w != "" && !strings.HasSuffix(lines[idx], "("+w+")") {
			t.Errorf("help line %q does not say who may run it (%s)", lines[idx], w)
		}
	}
	if !strings.Contains(help, "/plan accept [vN] [--stale] — accept the pending plan (--stale: on a changed workspace) (approvers)") {
		t.Errorf("help lacks the accept line:\n%s", help)
	}
	if !strings.Contains(help, "/plan revise 2: <comment>") || !strings.Contains(help, "sends the plan back with every comment") {
		t.Errorf("help does not say how step comments and a revise work together:\n%s", help)
	}
	if !strings.Contains(strings.ToLower(help), "buttons") {
		t.Errorf("help does not mention buttons:\n%s", help)
	}
}

func TestMenuEntries(t *testing.T) {
	entries := MenuEntries()
	telegramCommand := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	var plan *MenuEntry
	for i, e := range entries {
		if !telegramCommand.MatchString(e.Command) {
			t.Errorf("command %q is not a valid Telegram command", e.Command)
		}
		if n := utf8.RuneCountInString(e.Description); n == 0 || n > 100 {
			t.Errorf("description of %q has %d characters, want 1..100 (Discord; Telegram allows 256)", e.Command, n)
		}
		if e.Command == "plan" {
			plan = &entries[i]
		}
	}
	if plan == nil {
		t.Fatalf("no plan entry in %+v", entries)
	}
	for _, s := range Table() {
		if !strings.Contains(plan.Description, string(s.Name)) {
			t.Errorf("plan description %q does not list %q", plan.Description, s.Name)
		}
	}
}
