package commands

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// want is what a test expects from Parse; zero fields of a command are checked too.
type want struct {
	kind    ResultKind
	name    Name
	args    string
	version int
	stale   bool
	auto    AutoMode
	steps   []int
	reply   []string // substrings of Reply, for IsUsage
}

func checkResult(t *testing.T, got Result, w want) {
	t.Helper()
	if got.Kind != w.kind {
		t.Fatalf("Kind = %d, want %d (reply %q)", got.Kind, w.kind, got.Reply)
	}
	switch w.kind {
	case NotCommand:
		if !reflect.DeepEqual(got.Cmd, Command{}) || got.Reply != "" {
			t.Errorf("NotCommand carries data: %+v %q", got.Cmd, got.Reply)
		}
	case IsCommand:
		c := got.Cmd
		if c.Name != w.name || c.Args != w.args || c.Version != w.version || c.Auto != w.auto || c.Stale != w.stale {
			t.Errorf("Cmd = {Name:%q Args:%q Version:%d Auto:%q Stale:%v}, want {%q %q %d %q %v}",
				c.Name, c.Args, c.Version, c.Auto, c.Stale, w.name, w.args, w.version, w.auto, w.stale)
		}
		if !slices.Equal(c.Steps, w.steps) {
			t.Errorf("Steps = %v, want %v", c.Steps, w.steps)
		}
		if c.Spec.Name != c.Name {
			t.Errorf("Spec.Name = %q, want %q", c.Spec.Name, c.Name)
		}
		if got.Reply != "" {
			t.Errorf("IsCommand has a reply: %q", got.Reply)
		}
	case IsUsage:
		if got.Cmd.Name != w.name {
			t.Errorf("usage Cmd.Name = %q, want %q", got.Cmd.Name, w.name)
		}
		if got.Cmd.Spec.Name != got.Cmd.Name {
			t.Errorf("usage Spec.Name = %q, want %q", got.Cmd.Spec.Name, got.Cmd.Name)
		}
		for _, s := range w.reply {
			if !strings.Contains(got.Reply, s) {
				t.Errorf("reply %q does not contain %q", got.Reply, s)
			}
		}
	}
}

func TestParsePrefixAndAddressing(t *testing.T) {
	tests := []struct {
		name, text, bot string
		want            want
	}{
		{"empty", "", "", want{kind: NotCommand}},
		{"plain text", "hello there", "", want{kind: NotCommand}},
		{"plan later in text", "hello /plan accept", "", want{kind: NotCommand}},
		{"no slash", "plan accept", "", want{kind: NotCommand}},
		{"longer command word", "/planner", "", want{kind: NotCommand}},
		{"longer command with args", "/planning accept", "", want{kind: NotCommand}},
		{"slash after plan", "/plan/accept", "", want{kind: NotCommand}},
		{"other command", "/start", "", want{kind: NotCommand}},
		{"only slash", "/", "", want{kind: NotCommand}},
		{"prefix cut short", "/pla", "", want{kind: NotCommand}},
		{"bare", "/plan", "", want{kind: IsCommand, name: Status}},
		{"bare upper case", "/PLAN", "", want{kind: IsCommand, name: Status}},
		{"bare mixed case", "/PlAn", "", want{kind: IsCommand, name: Status}},
		{"surrounding space", "  \n\t/plan  \n", "", want{kind: IsCommand, name: Status}},
		{"byte order mark", "\ufeff/plan show", "", want{kind: IsCommand, name: Show}},
		{"non-breaking space separator", "/plan\u00a0accept", "", want{kind: IsCommand, name: Accept}},
		{"newline separator", "/plan\naccept", "", want{kind: IsCommand, name: Accept}},
		{"this bot", "/plan@PlanBot accept", "PlanBot", want{kind: IsCommand, name: Accept}},
		{"this bot any case", "/plan@planbot accept v2", "PlanBot", want{kind: IsCommand, name: Accept, args: "v2", version: 2}},
		{"bot name given with @", "/plan@planbot", "@PlanBot", want{kind: IsCommand, name: Status}},
		{"this bot bare", "/plan@PlanBot", "PlanBot", want{kind: IsCommand, name: Status}},
		{"other bot", "/plan@OtherBot accept", "PlanBot", want{kind: NotCommand}},
		{"other bot bare", "/plan@OtherBot", "PlanBot", want{kind: NotCommand}},
		{"bot name is a prefix", "/plan@PlanBotX accept", "PlanBot", want{kind: NotCommand}},
		{"any bot when name unknown", "/plan@Whoever show", "", want{kind: IsCommand, name: Show}},
		{"empty addressee", "/plan@ accept", "", want{kind: NotCommand}},
		{"addressee on unknown subcommand", "/plan@PlanBot acept", "PlanBot", want{kind: IsUsage, reply: []string{"Did you mean /plan accept?"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, Parse(tc.text, tc.bot), tc.want)
		})
	}
}

func TestParseSubcommands(t *testing.T) {
	tests := []struct {
		name, text string
		want       want
	}{
		// status, show, help, off: no arguments.
		{"status", "/plan status", want{kind: IsCommand, name: Status}},
		{"status upper", "/plan STATUS", want{kind: IsCommand, name: Status}},
		{"status with args", "/plan status now", want{kind: IsUsage, name: Status, reply: []string{"`/plan status` takes no arguments", "/plan status"}}},
		{"show", "/plan show", want{kind: IsCommand, name: Show}},
		{"show with args", "/plan show v2", want{kind: IsUsage, name: Show, reply: []string{"takes no arguments: /plan show"}}},
		{"help", "/plan Help", want{kind: IsCommand, name: Help}},
		{"help with args", "/plan help accept", want{kind: IsUsage, name: Help, reply: []string{"/plan help"}}},
		{"off", "/plan off", want{kind: IsCommand, name: Off}},
		{"off with args", "/plan off please", want{kind: IsUsage, name: Off, reply: []string{"takes no arguments: /plan off"}}},

		// on: optional goal.
		{"on", "/plan on", want{kind: IsCommand, name: On}},
		{"on with goal", "/plan on tidy the docs", want{kind: IsCommand, name: On, args: "tidy the docs"}},
		{"on with multi-line goal", "/plan ON tidy the docs\n- README\n- CHANGELOG  ", want{kind: IsCommand, name: On, args: "tidy the docs\n- README\n- CHANGELOG"}},

		// accept: optional version.
		{"accept", "/plan accept", want{kind: IsCommand, name: Accept}},
		{"accept vN", "/plan accept v2", want{kind: IsCommand, name: Accept, args: "v2", version: 2}},
		{"accept VN", "/plan Accept V12", want{kind: IsCommand, name: Accept, args: "V12", version: 12}},
		{"accept N", "/plan accept 3", want{kind: IsCommand, name: Accept, args: "3", version: 3}},
		{"accept v0", "/plan accept v0", want{kind: IsUsage, name: Accept, reply: []string{"start at v1", "/plan accept [vN]"}}},
		{"accept 0", "/plan accept 0", want{kind: IsUsage, name: Accept, reply: []string{"start at v1"}}},
		{"accept negative", "/plan accept -1", want{kind: IsUsage, name: Accept, reply: []string{`"-1" is not one`}}},
		{"accept plus sign", "/plan accept +2", want{kind: IsUsage, name: Accept, reply: []string{"/plan accept [vN]"}}},
		{"accept word", "/plan accept latest", want{kind: IsUsage, name: Accept, reply: []string{`"latest" is not one`, "/plan accept [vN]"}}},
		{"accept bare v", "/plan accept v", want{kind: IsUsage, name: Accept, reply: []string{"/plan accept [vN]"}}},
		{"accept two args", "/plan accept v2 v3", want{kind: IsUsage, name: Accept, reply: []string{"/plan accept [vN]"}}},
		{"accept vv2", "/plan accept vv2", want{kind: IsUsage, name: Accept, reply: []string{"/plan accept [vN]"}}},
		{"accept huge", "/plan accept v99999999999999999999999", want{kind: IsUsage, name: Accept, reply: []string{"too large"}}},
		{"accept --stale", "/plan accept --stale", want{kind: IsCommand, name: Accept, args: "--stale", stale: true}},
		{"accept vN --stale", "/plan accept v2 --stale", want{kind: IsCommand, name: Accept, args: "v2 --stale", version: 2, stale: true}},
		{"accept --stale vN", "/plan accept --STALE v3", want{kind: IsCommand, name: Accept, args: "--STALE v3", version: 3, stale: true}},
		{"accept --stale twice with two versions", "/plan accept --stale v2 v3", want{kind: IsUsage, name: Accept, reply: []string{`"v2 v3" is more`, "/plan accept [vN] [--stale]"}}},
		{"accept other flag", "/plan accept --force", want{kind: IsUsage, name: Accept, reply: []string{`"--force" is not one`}}},
		{"accept unicode digits", "/plan accept v٣", want{kind: IsUsage, name: Accept, reply: []string{"/plan accept [vN]"}}},

		// revise and answer: text required, spans lines.
		{"revise", "/plan revise also fix typos", want{kind: IsCommand, name: Revise, args: "also fix typos"}},
		{"revise multi-line", "/plan revise\n  1. keep the intro\n\n  2. drop step 3\n", want{kind: IsCommand, name: Revise, args: "1. keep the intro\n\n  2. drop step 3"}},
		{"revise unicode", "/plan revise bitte auch Übersetzungen 🇩🇪 — 日本語も", want{kind: IsCommand, name: Revise, args: "bitte auch Übersetzungen 🇩🇪 — 日本語も"}},
		{"revise keeps case", "/plan REVISE Keep THE Case", want{kind: IsCommand, name: Revise, args: "Keep THE Case"}},
		// A bare revise sends pending step comments back; the core refuses it when there are none.
		{"revise bare", "/plan revise", want{kind: IsCommand, name: Revise}},
		{"revise only spaces", "/plan revise   \n ", want{kind: IsCommand, name: Revise}},
		// Step comments: a list of step numbers and a colon first.
		{"comment one step", "/plan revise 2: use the v2 API instead", want{kind: IsCommand, name: Revise, args: "use the v2 API instead", steps: []int{2}}},
		{"comment two steps", "/plan revise 2,4: share one client", want{kind: IsCommand, name: Revise, args: "share one client", steps: []int{2, 4}}},
		{"comment spaced list", "/plan revise 4 , 2 ,4 :  x", want{kind: IsCommand, name: Revise, args: "x", steps: []int{4, 2}}},
		{"comment step word", "/plan revise Step 3: drop it", want{kind: IsCommand, name: Revise, args: "drop it", steps: []int{3}}},
		{"comment steps word", "/plan revise steps 1,3: merge them", want{kind: IsCommand, name: Revise, args: "merge them", steps: []int{1, 3}}},
		{"comment multi-line", "/plan revise 2: first\nsecond: line", want{kind: IsCommand, name: Revise, args: "first\nsecond: line", steps: []int{2}}},
		{"feedback with a colon", "/plan revise Note: also fix typos", want{kind: IsCommand, name: Revise, args: "Note: also fix typos"}},
		{"feedback list with colon later", "/plan revise 1. keep the intro: it is fine", want{kind: IsCommand, name: Revise, args: "1. keep the intro: it is fine"}},
		{"feedback colon on a later line", "/plan revise keep it\n2: drop", want{kind: IsCommand, name: Revise, args: "keep it\n2: drop"}},
		{"comment empty entry", "/plan revise 2,,4: x", want{kind: IsUsage, name: Revise, reply: []string{`"2,,4" has an empty entry`, "/plan revise [N[,M]:] [feedback]"}}},
		{"comment trailing comma", "/plan revise 2,: x", want{kind: IsUsage, name: Revise, reply: []string{"empty entry"}}},
		{"comment step zero", "/plan revise 0: x", want{kind: IsUsage, name: Revise, reply: []string{"steps are numbered from 1"}}},
		{"comment word step", "/plan revise step x: y", want{kind: IsUsage, name: Revise, reply: []string{`"x" is not a step number`}}},
		{"comment word in list", "/plan revise 2,x: y", want{kind: IsUsage, name: Revise, reply: []string{`"x" is not a step number`}}},
		{"comment huge", "/plan revise 99999999999999999999: y", want{kind: IsUsage, name: Revise, reply: []string{"too large"}}},
		{"comment without text", "/plan revise 2:", want{kind: IsUsage, name: Revise, reply: []string{"needs the comment after the colon: /plan revise 2: <comment>"}}},
		{"comment blank text", "/plan revise 2,4:  \n ", want{kind: IsUsage, name: Revise, reply: []string{"needs the comment"}}},
		{"answer text", "/plan answer use Postgres", want{kind: IsCommand, name: Answer, args: "use Postgres"}},
		{"answer option", "/plan answer 2", want{kind: IsCommand, name: Answer, args: "2"}},
		{"answer unicode", "/plan answer ja, bitte 👍", want{kind: IsCommand, name: Answer, args: "ja, bitte 👍"}},
		{"answer missing", "/plan answer", want{kind: IsUsage, name: Answer, reply: []string{"`/plan answer` needs", "/plan answer <text or option number>"}}},

		// auto.
		{"auto bare", "/plan auto", want{kind: IsCommand, name: Auto, auto: AutoOn}},
		{"auto on", "/plan auto on", want{kind: IsCommand, name: Auto, args: "on", auto: AutoOn}},
		{"auto ON", "/plan AUTO ON", want{kind: IsCommand, name: Auto, args: "ON", auto: AutoOn}},
		{"auto off", "/plan auto off", want{kind: IsCommand, name: Auto, args: "off", auto: AutoOff}},
		{"auto Off", "/plan auto Off", want{kind: IsCommand, name: Auto, args: "Off", auto: AutoOff}},
		{"auto maybe", "/plan auto maybe", want{kind: IsUsage, name: Auto, reply: []string{"/plan auto [on|off]"}}},
		{"auto on off", "/plan auto on off", want{kind: IsUsage, name: Auto, reply: []string{"/plan auto [on|off]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, Parse(tc.text, ""), tc.want)
		})
	}
}

func TestParseUnknownSubcommand(t *testing.T) {
	list := "Subcommands: status, show, help, on, off, accept, revise, edit, answer, auto, undo, nudge."
	tests := []struct {
		name, text string
		reply      []string
		noSuggest  bool
	}{
		{"one deletion", "/plan acept", []string{`Unknown subcommand "acept". Did you mean /plan accept?`, list}, false},
		{"swap", "/plan accpet", []string{"Did you mean /plan accept?"}, false},
		{"substitution", "/plan revice more tests", []string{`"revice"`, "Did you mean /plan revise?"}, false},
		{"upper case typo", "/plan STAUTS", []string{`"STAUTS"`, "Did you mean /plan status?"}, false},
		{"unique prefix", "/plan acc", []string{"Did you mean /plan accept?"}, false},
		{"unique prefix nudge", "/plan nud every 2h", []string{"Did you mean /plan nudge?"}, false},
		{"prefix of off", "/plan of", []string{"Did you mean /plan off?"}, false},
		{"ambiguous prefix", "/plan a", []string{"Did you mean /plan accept, /plan answer or /plan auto?"}, false},
		{"two-way prefix", "/plan s", []string{"Did you mean /plan status or /plan show?"}, false},
		{"extra letters", "/plan accepted", []string{"Did you mean /plan accept?"}, false},
		{"short typo", "/plan hlep", []string{"Did you mean /plan help?"}, false},
		{"nothing close", "/plan xyzzy", []string{`Unknown subcommand "xyzzy".`, list}, true},
		{"version without accept", "/plan v2", []string{`"v2"`, list}, true},
		{"unicode word", "/plan ähm", []string{`"ähm"`, list}, true},
		{"long word cut", "/plan " + strings.Repeat("x", 200), []string{"…", list}, true},
		{"control character escaped", "/plan a\x00b", []string{`\x00`}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.text, "")
			checkResult(t, got, want{kind: IsUsage, reply: tc.reply})
			if tc.noSuggest && strings.Contains(got.Reply, "Did you mean") {
				t.Errorf("unexpected suggestion in %q", got.Reply)
			}
			if n := strings.Count(got.Reply, "\n"); n != 1 {
				t.Errorf("reply has %d newlines, want 2 lines: %q", n, got.Reply)
			}
		})
	}
}

// Usage replies are generated from the table: every row's synopsis shows up in the reply
// to a wrong form of that row.
func TestUsageRepliesComeFromTable(t *testing.T) {
	for _, s := range Table() {
		t.Run(string(s.Name), func(t *testing.T) {
			var text string
			switch {
			case s.Args == "":
				text = "/plan " + string(s.Name) + " unexpected"
			case s.ArgRequired:
				text = "/plan " + string(s.Name)
			case s.Name == On, s.Name == Edit:
				t.Skip("on and edit accept any text (a goal, a path)")
			case s.Name == Revise:
				text = "/plan revise 2,,4: x" // any other text is feedback
			case s.Name == Nudge:
				text = "/plan nudge every" // any other text may be a cron spec, which nudges checks
			default:
				text = "/plan " + string(s.Name) + " ??? !!!"
			}
			got := Parse(text, "")
			if got.Kind != IsUsage {
				t.Fatalf("Parse(%q).Kind = %d, want IsUsage", text, got.Kind)
			}
			if !strings.Contains(got.Reply, UsageOf(s.Name)) {
				t.Errorf("reply %q does not name the usage %q", got.Reply, UsageOf(s.Name))
			}
			if got.Cmd.Spec != s {
				t.Errorf("Cmd.Spec = %+v, want %+v", got.Cmd.Spec, s)
			}
		})
	}
}

// Every row parses in its simplest valid form, with its table row attached.
func TestEveryRowParses(t *testing.T) {
	minimal := map[Name]string{Revise: "x", Answer: "1", Nudge: "off"}
	for _, s := range Table() {
		t.Run(string(s.Name), func(t *testing.T) {
			text := strings.TrimSpace("/plan " + string(s.Name) + " " + minimal[s.Name])
			got := Parse(text, "")
			if got.Kind != IsCommand {
				t.Fatalf("Parse(%q) = %d %q, want IsCommand", text, got.Kind, got.Reply)
			}
			if got.Cmd.Spec != s {
				t.Errorf("Cmd.Spec = %+v, want %+v", got.Cmd.Spec, s)
			}
		})
	}
}

// /plan edit carries the path as typed (the terminal reads it); on other platforms it is a
// caption with no argument.
func TestParseEdit(t *testing.T) {
	for text, want := range map[string]string{
		"/plan edit":                     "",
		"/plan edit plans/my plan v2.md": "plans/my plan v2.md",
		"/PLAN EDIT  ./x.md ":            "./x.md",
	} {
		got := Parse(text, "")
		if got.Kind != IsCommand || got.Cmd.Name != Edit || got.Cmd.Args != want {
			t.Errorf("Parse(%q) = %+v, want edit with args %q", text, got, want)
		}
	}
}
