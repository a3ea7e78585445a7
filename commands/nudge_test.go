package commands

import (
	"testing"
	"time"
	_ "time/tzdata" // CRON_TZ cases must not depend on the machine's zoneinfo
)

func TestParseNudge(t *testing.T) {
	tests := []struct {
		name, text string
		want       *NudgeRequest // nil: a usage reply is expected
		reply      []string
	}{
		{"off", "/plan nudge off", &NudgeRequest{Mode: NudgeModeOff}, nil},
		{"OFF", "/plan NUDGE OFF", &NudgeRequest{Mode: NudgeModeOff}, nil},
		{"off with more", "/plan nudge off now", nil, []string{"`/plan nudge off` takes nothing more"}},
		{"snooze", "/plan nudge snooze 2h", &NudgeRequest{Mode: NudgeModeSnooze, Duration: 2 * time.Hour}, nil},
		{"snooze compound", "/plan nudge Snooze 1h30m", &NudgeRequest{Mode: NudgeModeSnooze, Duration: 90 * time.Minute}, nil},
		{"snooze words", "/plan nudge snooze 2 hours", &NudgeRequest{Mode: NudgeModeSnooze, Duration: 2 * time.Hour}, nil},
		{"snooze a day", "/plan nudge snooze 1d", &NudgeRequest{Mode: NudgeModeSnooze, Duration: 24 * time.Hour}, nil},
		{"snooze missing", "/plan nudge snooze", nil, []string{"`/plan nudge snooze` needs a duration"}},
		{"snooze garbage", "/plan nudge snooze soon", nil, []string{`"soon" is not a duration`}},
		{"every", "/plan nudge every 2h", &NudgeRequest{Mode: NudgeModeEvery, Duration: 2 * time.Hour}, nil},
		{"every one second", "/plan nudge every 1s", &NudgeRequest{Mode: NudgeModeEvery, Duration: time.Second}, nil},
		{"every quoted", `/plan nudge every "45m"`, &NudgeRequest{Mode: NudgeModeEvery, Duration: 45 * time.Minute}, nil},
		{"every below a second", "/plan nudge every 500ms", nil, []string{`"500ms" is shorter than 1s`}},
		{"every zero", "/plan nudge every 0s", nil, []string{"shorter than 1s"}},
		{"every negative", "/plan nudge every -5m", nil, []string{"shorter than 1s"}},
		{"every missing", "/plan nudge every", nil, []string{"needs a duration"}},
		{"every overflow", "/plan nudge every 99999999999999h", nil, []string{"is not a duration"}},
		{"plain duration", "/plan nudge 2h", &NudgeRequest{Mode: NudgeModeEvery, Duration: 2 * time.Hour}, nil},
		{"plain duration words", "/plan nudge 30 minutes", &NudgeRequest{Mode: NudgeModeEvery, Duration: 30 * time.Minute}, nil},
		{"plain duration too short", "/plan nudge 10ms", nil, []string{"shorter than 1s"}},

		{"cron five fields", "/plan nudge 0 9 * * 1-5", &NudgeRequest{Mode: NudgeModeCron, Spec: "0 9 * * 1-5", Text: cronArg("/plan nudge 0 9 * * 1-5")}, nil},
		{"cron double quotes", `/plan nudge "0 9 * * 1-5"`, &NudgeRequest{Mode: NudgeModeCron, Spec: "0 9 * * 1-5", Text: cronArg(`/plan nudge "0 9 * * 1-5"`)}, nil},
		{"cron single quotes", `/plan nudge '*/15 * * * *'`, &NudgeRequest{Mode: NudgeModeCron, Spec: "*/15 * * * *", Text: cronArg(`/plan nudge '*/15 * * * *'`)}, nil},
		{"cron typographic quotes", "/plan nudge “0 9 * * MON-FRI”", &NudgeRequest{Mode: NudgeModeCron, Spec: "0 9 * * MON-FRI", Text: cronArg("/plan nudge “0 9 * * MON-FRI”")}, nil},
		{"cron spaces collapsed", "/plan nudge 0  9\t* * *", &NudgeRequest{Mode: NudgeModeCron, Spec: "0 9 * * *", Text: cronArg("/plan nudge 0  9\t* * *")}, nil},
		{"cron daily", "/plan nudge @daily", &NudgeRequest{Mode: NudgeModeCron, Spec: "@daily", Text: cronArg("/plan nudge @daily")}, nil},
		{"cron every descriptor", "/plan nudge @every 2h", &NudgeRequest{Mode: NudgeModeCron, Spec: "@every 2h", Text: cronArg("/plan nudge @every 2h")}, nil},
		{"cron tz", "/plan nudge CRON_TZ=Europe/Berlin 0 9 * * 1-5", &NudgeRequest{Mode: NudgeModeCron, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", Text: cronArg("/plan nudge CRON_TZ=Europe/Berlin 0 9 * * 1-5")}, nil},
		{"cron tz quoted", `/plan nudge "CRON_TZ=Europe/Berlin 0 9 * * 1-5"`, &NudgeRequest{Mode: NudgeModeCron, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", Text: cronArg(`/plan nudge "CRON_TZ=Europe/Berlin 0 9 * * 1-5"`)}, nil},
		{"cron tz lower case prefix", "/plan nudge cron_tz=UTC @hourly", &NudgeRequest{Mode: NudgeModeCron, Spec: "CRON_TZ=UTC @hourly", Text: cronArg("/plan nudge cron_tz=UTC @hourly")}, nil},
		{"cron tz short prefix", "/plan nudge TZ=Asia/Tokyo 30 8 * * *", &NudgeRequest{Mode: NudgeModeCron, Spec: "TZ=Asia/Tokyo 30 8 * * *", Text: cronArg("/plan nudge TZ=Asia/Tokyo 30 8 * * *")}, nil},
		{"cron tz tab separated", "/plan nudge CRON_TZ=UTC\t0 9 * * *", &NudgeRequest{Mode: NudgeModeCron, Spec: "CRON_TZ=UTC 0 9 * * *", Text: cronArg("/plan nudge CRON_TZ=UTC\t0 9 * * *")}, nil},

		{"cron zone without schedule", "/plan nudge CRON_TZ=Europe/Berlin", nil, []string{"needs a schedule after the time zone"}},
		{"empty", "/plan nudge", nil, []string{"`/plan nudge` needs off, snooze <duration>, every <duration> or a cron spec"}},
		{"empty quotes", `/plan nudge ""`, nil, []string{"empty spec"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.text, "")
			if tc.want == nil {
				checkResult(t, got, want{kind: IsUsage, name: Nudge, reply: append(tc.reply, "Usage: "+UsageOf(Nudge))})
				if got.Cmd.Nudge != nil {
					t.Errorf("usage result carries a nudge request: %+v", *got.Cmd.Nudge)
				}
				return
			}
			if got.Kind != IsCommand {
				t.Fatalf("Kind = %d, reply %q; want IsCommand", got.Kind, got.Reply)
			}
			if got.Cmd.Name != Nudge || got.Cmd.Nudge == nil {
				t.Fatalf("Cmd = %+v, want a nudge request", got.Cmd)
			}
			if *got.Cmd.Nudge != *tc.want {
				t.Errorf("Nudge = %+v, want %+v", *got.Cmd.Nudge, *tc.want)
			}
		})
	}
}

// cronArg is the argument text of a /plan nudge command as the request keeps it.
func cronArg(text string) string {
	_, rest := cutWord(text)
	_, rest = cutWord(rest)
	return rest
}

// A cron spec the scheduler refuses gets the reply the parser gives its own refusals:
// the reason, a keyword suggestion only for a misspelt word, and the usage line.
func TestCronRefusal(t *testing.T) {
	usageLine := "\nUsage: /plan nudge off | snooze <duration> | every <duration> | <cron spec>" + nudgeExamples
	tests := []struct{ text, reason, want string }{
		{"/plan nudge 0 9 * *", "expected exactly 5 fields, found 4",
			"`/plan nudge`: \"0 9 * *\" is not a valid cron spec (expected exactly 5 fields, found 4)." + usageLine},
		{`/plan nudge "0 0 30 2 *"`, "it never fires",
			"`/plan nudge`: \"0 0 30 2 *\" is not a valid cron spec (it never fires)." + usageLine},
		{"/plan nudge snoze 2h", "expected exactly 5 fields, found 2",
			"`/plan nudge`: \"snoze 2h\" is not a valid cron spec (expected exactly 5 fields, found 2). Did you mean /plan nudge snooze?" + usageLine},
		{"/plan nudge evry 2h", "x", "`/plan nudge`: \"evry 2h\" is not a valid cron spec (x). Did you mean /plan nudge every?" + usageLine},
		// Specs that merely start oddly get no keyword suggestion.
		{"/plan nudge @every 10ms", "@every must be at least 1s", "`/plan nudge`: \"@every 10ms\" is not a valid cron spec (@every must be at least 1s)." + usageLine},
		{"/plan nudge xyz", "expected exactly 5 fields, found 1", "`/plan nudge`: \"xyz\" is not a valid cron spec (expected exactly 5 fields, found 1)." + usageLine},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			got := Parse(tc.text, "")
			if got.Kind != IsCommand || got.Cmd.Nudge == nil || got.Cmd.Nudge.Mode != NudgeModeCron {
				t.Fatalf("Parse(%q) = %d %+v %q, want a cron request", tc.text, got.Kind, got.Cmd.Nudge, got.Reply)
			}
			if r := got.Cmd.Nudge.CronRefusal(tc.reason); r != tc.want {
				t.Errorf("CronRefusal =\n%s\nwant\n%s", r, tc.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"2h", 2 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"1.5h", 90 * time.Minute, false},
		{"90s", 90 * time.Second, false},
		{"2 hours", 2 * time.Hour, false},
		{"1 hour 30 minutes", 90 * time.Minute, false},
		{"1 hour, 30 min", 90 * time.Minute, false},
		{"2H", 2 * time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"1 day 2h", 26 * time.Hour, false},
		{"2 weeks", 14 * 24 * time.Hour, false},
		{"'10m'", 10 * time.Minute, false},
		{"", 0, true},
		{"soon", 0, true},
		{"5", 0, true},
		{"h", 0, true},
		{"2 fortnights", 0, true},
		{"1..5h", 0, true},
		{"0 9 * * *", 0, true},
		{"9999999999999 weeks", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDuration(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseDuration(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("parseDuration(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"a b"`, "a b"},
		{`'a b'`, "a b"},
		{"`a b`", "a b"},
		{"“a b”", "a b"},
		{"„a b“", "a b"},
		{"«a b»", "a b"},
		{`" a b "`, "a b"},
		{`"a b'`, `"a b'`},
		{`"`, `"`},
		{`""`, ""},
		{"a b", "a b"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := unquote(tc.in); got != tc.want {
				t.Errorf("unquote(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
