package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/access"
)

// TestConfigAccessTalk: allowed_users, unlisted_channels and rate_limit as the engine's
// gate gets them, and as config check describes them.
func TestConfigAccessTalk(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "access:\n  approvers: [slack:U1]\n"+
		"  policies:\n    - match: {channel: discord}\n      approvers: [\"discord:7\"]\n"+
		"  allowed_users: [telegram:42, discord-role:9]\n  unlisted_channels: closed\n"+
		"  rate_limit: {per_minute: 20}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Access.rules()
	want := access.Rules{
		AllowedUsers: []string{"telegram:42", "discord-role:9"}, Listed: []string{"telegram", "discord"},
		Unlisted: access.UnlistedClosed, Approvers: []string{"discord:7", "slack:U1"}, PerMinute: 20, Burst: defaultBurst,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rules\n got %+v\nwant %+v", got, want)
	}
	if d := cfg.Describe(); !strings.Contains(d, "talk:      2 listed and approvers on telegram, discord; approvers only elsewhere; 20 messages a minute per person, 5 at once\n") {
		t.Errorf("config check does not say who may talk:\n%s", d)
	}
	def, err := LoadConfig(writeConfig(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := def.Describe(); !strings.Contains(d, "talk:      anyone; no rate limit\n") {
		t.Errorf("defaults described as:\n%s", d)
	}
	if r := def.Access.rules(); r.PerMinute != 0 || r.Unlisted != access.UnlistedOpen || len(r.Listed) != 0 {
		t.Errorf("default rules %+v, want everyone in and no limit", r)
	}
}

func TestConfigAccessTalkErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{
			name: "unknown keys",
			body: "access:\n  allowed_user: [telegram:1]\n  rate_limit:\n    per_min: 3\n    burts: 2\n",
			want: []string{
				`FILE:2: unknown key "allowed_user" in access (did you mean "allowed_users"?)`,
				`FILE:4: unknown key "per_min" in access.rate_limit (valid keys: per_minute, burst)`,
				`FILE:5: unknown key "burts" in access.rate_limit (did you mean "burst"?)`,
			},
		},
		{
			name: "wrong shapes",
			body: "access:\n  allowed_users: telegram:1\n  unlisted_channels: [closed]\n  rate_limit: 20\n",
			want: []string{
				`FILE:2: access.allowed_users: expected a list such as [a, b], got "telegram:1"`,
				`FILE:3: access.unlisted_channels: expected text, got a list`,
				`FILE:4: access.rate_limit: expected a section of key: value lines, got "20"`,
			},
		},
		{
			name: "bad values",
			body: "access:\n  allowed_users: [\"telegram:1\", \"matrix:2\", telegram, \"telegram:1\"]\n" +
				"  unlisted_channels: shut\n  rate_limit:\n    per_minute: 6001\n    burst: 0\n",
			want: []string{
				`FILE:2: access.allowed_users[1] is "matrix:2": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
				`FILE:2: access.allowed_users[2] is "telegram": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
				`FILE:2: access.allowed_users[3] names "telegram:1" again (so does allowed_users[0]): remove one`,
				`FILE:3: access.unlisted_channels is "shut": expected open or closed`,
				`FILE:5: access.rate_limit.per_minute is 6001: it must be between 0 (no limit) and 6000 messages a minute per person`,
				`FILE:6: access.rate_limit.burst is 0: it must be between 1 and 1000 (messages a person may send at once; default 5)`,
			},
		},
		{
			name: "closed to everyone",
			body: "access:\n  unlisted_channels: closed\n",
			want: []string{`FILE:2: access.unlisted_channels is closed, but neither allowed_users nor approvers list anyone: nobody but the terminal's operator and the admin API could talk to the bot; list people in allowed_users, or set unlisted_channels: open`},
		},
		{
			name: "a fraction",
			body: "access:\n  rate_limit: {per_minute: 20, burst: 1.5}\n",
			want: []string{
				`FILE:2: access.rate_limit.burst: expected a whole number, got "1.5"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
