package commands

import (
	"strings"
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
		{"off", "/plan nudge off", &NudgeRequest{Kind: NudgeOff}, nil},
		{"OFF", "/plan NUDGE OFF", &NudgeRequest{Kind: NudgeOff}, nil},
		{"off with more", "/plan nudge off now", nil, []string{"`/plan nudge off` takes nothing more"}},
		{"snooze", "/plan nudge snooze 2h", &NudgeRequest{Kind: NudgeSnooze, Duration: 2 * time.Hour}, nil},
		{"snooze compound", "/plan nudge Snooze 1h30m", &NudgeRequest{Kind: NudgeSnooze, Duration: 90 * time.Minute}, nil},
		{"snooze words", "/plan nudge snooze 2 hours", &NudgeRequest{Kind: NudgeSnooze, Duration: 2 * time.Hour}, nil},
		{"snooze a day", "/plan nudge snooze 1d", &NudgeRequest{Kind: NudgeSnooze, Duration: 24 * time.Hour}, nil},
		{"snooze missing", "/plan nudge snooze", nil, []string{"`/plan nudge snooze` needs a duration"}},
		{"snooze garbage", "/plan nudge snooze soon", nil, []string{`"soon" is not a duration`}},
		{"every", "/plan nudge every 2h", &NudgeRequest{Kind: NudgeEvery, Duration: 2 * time.Hour}, nil},
		{"every one second", "/plan nudge every 1s", &NudgeRequest{Kind: NudgeEvery, Duration: time.Second}, nil},
		{"every quoted", `/plan nudge every "45m"`, &NudgeRequest{Kind: NudgeEvery, Duration: 45 * time.Minute}, nil},
		{"every below a second", "/plan nudge every 500ms", nil, []string{`"500ms" is shorter than 1s`}},
		{"every zero", "/plan nudge every 0s", nil, []string{"shorter than 1s"}},
		{"every negative", "/plan nudge every -5m", nil, []string{"shorter than 1s"}},
		{"every missing", "/plan nudge every", nil, []string{"needs a duration"}},
		{"every overflow", "/plan nudge every 99999999999999h", nil, []string{"is not a duration"}},
		{"plain duration", "/plan nudge 2h", &NudgeRequest{Kind: NudgeEvery, Duration: 2 * time.Hour}, nil},
		{"plain duration words", "/plan nudge 30 minutes", &NudgeRequest{Kind: NudgeEvery, Duration: 30 * time.Minute}, nil},
		{"plain duration too short", "/plan nudge 10ms", nil, []string{"shorter than 1s"}},

		{"cron five fields", "/plan nudge 0 9 * * 1-5", &NudgeRequest{Kind: NudgeCron, Spec: "0 9 * * 1-5"}, nil},
		{"cron double quotes", `/plan nudge "0 9 * * 1-5"`, &NudgeRequest{Kind: NudgeCron, Spec: "0 9 * * 1-5"}, nil},
		{"cron single quotes", `/plan nudge '*/15 * * * *'`, &NudgeRequest{Kind: NudgeCron, Spec: "*/15 * * * *"}, nil},
		{"cron typographic quotes", "/plan nudge “0 9 * * MON-FRI”", &NudgeRequest{Kind: NudgeCron, Spec: "0 9 * * MON-FRI"}, nil},
		{"cron spaces collapsed", "/plan nudge 0  9\t* * *", &NudgeRequest{Kind: NudgeCron, Spec: "0 9 * * *"}, nil},
		{"cron daily", "/plan nudge @daily", &NudgeRequest{Kind: NudgeCron, Spec: "@daily"}, nil},
		{"cron every descriptor", "/plan nudge @every 2h", &NudgeRequest{Kind: NudgeCron, Spec: "@every 2h"}, nil},
		{"cron tz", "/plan nudge CRON_TZ=Europe/Berlin 0 9 * * 1-5", &NudgeRequest{Kind: NudgeCron, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5"}, nil},
		{"cron tz quoted", `/plan nudge "CRON_TZ=Europe/Berlin 0 9 * * 1-5"`, &NudgeRequest{Kind: NudgeCron, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5"}, nil},
		{"cron tz lower case prefix", "/plan nudge cron_tz=UTC @hourly", &NudgeRequest{Kind: NudgeCron, Spec: "CRON_TZ=UTC @hourly"}, nil},
		{"cron tz short prefix", "/plan nudge TZ=Asia/Tokyo 30 8 * * *", &NudgeRequest{Kind: NudgeCron, Spec: "TZ=Asia/Tokyo 30 8 * * *"}, nil},
		{"cron tz tab separated", "/plan nudge CRON_TZ=UTC\t0 9 * * *", &NudgeRequest{Kind: NudgeCron, Spec: "CRON_TZ=UTC 0 9 * * *"}, nil},

		{"cron too few fields", "/plan nudge 0 9 * *", nil, []string{`"0 9 * *" is not a valid cron spec`, "expected exactly 5 fields, found 4"}},
		{"cron seconds field", "/plan nudge 0 0 9 * * *", nil, []string{"expected exactly 5 fields, found 6"}},
		{"cron out of range", "/plan nudge 61 * * * *", nil, []string{"above maximum"}},
		{"cron bad descriptor", "/plan nudge @dayly", nil, []string{"unrecognized descriptor: @dayly"}},
		{"cron bad zone", "/plan nudge CRON_TZ=Mars/Olympus 0 9 * * *", nil, []string{"bad location Mars/Olympus"}},
		{"cron zone without schedule", "/plan nudge CRON_TZ=Europe/Berlin", nil, []string{"needs a schedule after the time zone"}},
		{"cron never fires", "/plan nudge 0 0 30 2 *", nil, []string{"never fires"}},
		{"cron every below a second", "/plan nudge @every 100ms", nil, []string{"@every must be at least 1s"}},
		{"cron every garbage", "/plan nudge @every soon", nil, []string{"failed to parse duration"}},
		{"empty", "/plan nudge", nil, []string{"`/plan nudge` needs off, snooze <duration>, every <duration> or a cron spec"}},
		{"empty quotes", `/plan nudge ""`, nil, []string{"empty spec"}},
		{"keyword typo", "/plan nudge snoze 2h", nil, []string{"Did you mean /plan nudge snooze?"}},
		{"keyword typo every", "/plan nudge evry 2h", nil, []string{"Did you mean /plan nudge every?"}},
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

// Where the parser suggests a keyword, it must not do so for specs that merely start oddly.
func TestParseNudgeNoKeywordSuggestionForSpecs(t *testing.T) {
	for _, text := range []string{"/plan nudge @every 10ms", "/plan nudge 0 9 * *", "/plan nudge xyz"} {
		t.Run(text, func(t *testing.T) {
			got := Parse(text, "")
			if got.Kind != IsUsage || strings.Contains(got.Reply, "Did you mean") {
				t.Errorf("Parse(%q) = %d %q, want a usage reply without a suggestion", text, got.Kind, got.Reply)
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

func TestNextFire(t *testing.T) {
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		want time.Time
		bad  bool
	}{
		{spec: "@every 2h", want: base.Add(2 * time.Hour)},
		{spec: "0 9 * * *", want: base.Add(time.Hour)},
		{spec: "CRON_TZ=Europe/Berlin 0 9 * * *", want: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
		{spec: "nonsense", bad: true},
		{spec: "0 0 30 2 *", bad: true},
	} {
		got, err := NextFire(tc.spec, base)
		if (err != nil) != tc.bad {
			t.Errorf("NextFire(%q) error = %v, want error %v", tc.spec, err, tc.bad)
			continue
		}
		if !tc.bad && !got.Equal(tc.want) {
			t.Errorf("NextFire(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}
