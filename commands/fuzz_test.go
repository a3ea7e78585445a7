package commands

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "/plan", "/PLAN", "/plan@bot accept v2", "/plan@other show", "/planner",
		"/plan acept", "/plan a", "/plan revise line one\nline two", "/plan revise 2,4: use v2\nand v3", "/plan revise step x: y", "/plan answer 2",
		"/plan accept v0", "/plan accept 99999999999999999999", "/plan auto off",
		"/plan nudge every 2h", "/plan nudge snooze 1d", "/plan nudge \"0 9 * * 1-5\"",
		"/plan nudge CRON_TZ=Europe/Berlin 0 9 * * 1-5", "/plan nudge CRON_TZ=UTC",
		"/plan nudge TZ=UTC\t@daily", "/plan nudge @every 1ms", "/plan nudge */0 * * * *",
		"/plan nudge 1-2-3 * * * *", "/plan nudge 0 0 31 2 *", "/plan \xff\xfe", "/plan on 日本語",
	}
	for _, s := range seeds {
		f.Add(s, "")
		f.Add(s, "bot")
	}
	f.Fuzz(func(t *testing.T, text, bot string) {
		r := Parse(text, bot)
		switch r.Kind {
		case NotCommand:
			if !reflect.DeepEqual(r.Cmd, Command{}) || r.Reply != "" {
				t.Fatalf("NotCommand carries data: %+v %q", r.Cmd, r.Reply)
			}
		case IsCommand:
			spec, ok := Lookup(r.Cmd.Name)
			if !ok || r.Cmd.Spec != spec {
				t.Fatalf("Cmd.Spec %+v does not match the row of %q", r.Cmd.Spec, r.Cmd.Name)
			}
			if spec.ArgRequired && r.Cmd.Args == "" {
				t.Fatalf("%q parsed without its required argument", r.Cmd.Name)
			}
			for _, n := range r.Cmd.Steps {
				if n < 1 || r.Cmd.Name != Revise || r.Cmd.Args == "" {
					t.Fatalf("steps %v on %q with comment %q", r.Cmd.Steps, r.Cmd.Name, r.Cmd.Args)
				}
			}
			if r.Cmd.Name == Nudge && (r.Cmd.Nudge == nil || r.Cmd.Nudge.Mode == "") {
				t.Fatalf("nudge without a request: %+v", r.Cmd)
			}
			if n := r.Cmd.Nudge; n != nil && (n.Mode == NudgeModeSnooze || n.Mode == NudgeModeEvery) && n.Duration < minNudge {
				t.Fatalf("nudge duration %v below %v", n.Duration, minNudge)
			}
			if r.Cmd.Version < 0 {
				t.Fatalf("negative version %d", r.Cmd.Version)
			}
			if r.Reply != "" {
				t.Fatalf("IsCommand with reply %q", r.Reply)
			}
		case IsUsage:
			if r.Reply == "" {
				t.Fatal("IsUsage without a reply")
			}
			if r.Cmd.Name != "" && r.Cmd.Spec.Name != r.Cmd.Name {
				t.Fatalf("usage Spec %+v does not match %q", r.Cmd.Spec, r.Cmd.Name)
			}
			if utf8.ValidString(text) && !utf8.ValidString(r.Reply) {
				t.Fatalf("valid input produced an invalid UTF-8 reply %q", r.Reply)
			}
			if len(r.Reply) > 1000 {
				t.Fatalf("reply is %d bytes; usage replies must stay short", len(r.Reply))
			}
		default:
			t.Fatalf("unknown kind %d", r.Kind)
		}
		if r.Kind != NotCommand && !strings.HasPrefix(strings.ToLower(strings.TrimFunc(text, isSpace)), "/plan") {
			t.Fatalf("%q is not a /plan command but parsed as kind %d", text, r.Kind)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	inputs := []string{
		"just chatting about the weather",
		"/plan accept v3",
		"/plan revise please also update the changelog\nand the docs",
		"/plan acept",
		"/plan nudge CRON_TZ=Europe/Berlin 0 9 * * 1-5",
	}
	for _, in := range inputs {
		b.Run(strings.Fields(in)[0]+"_"+strings.Fields(in + " x")[1], func(b *testing.B) {
			for b.Loop() {
				Parse(in, "PlanBot")
			}
		})
	}
}
