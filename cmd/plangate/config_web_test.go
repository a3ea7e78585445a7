package main

import (
	"strings"
	"testing"
	"time"
)

// TestWebConfig: channels.web reads its users from the environment (a map of name: token),
// is checked by the web package's own Validate, and needs http.listen.
func TestWebConfig(t *testing.T) {
	body := "http: {listen: \"127.0.0.1:0\"}\nchannels:\n  web:\n    enabled: true\n    users:\n      alice: ${WEB_ALICE}\n      bob: bob-token-0123456789abc\n    session_ttl: 12h\n    max_conversations: 20\n    max_streams: 4\n    max_message_bytes: 8192\n"
	cfg, err := LoadConfig(writeConfig(t, body), env(map[string]string{"WEB_ALICE": "alice-token-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Channels.Web
	if !w.Enabled || w.Users["alice"] != "alice-token-0123456789" || w.Users["bob"] != "bob-token-0123456789abc" || w.SessionTTL != 12*time.Hour ||
		w.MaxConversations != 20 || w.MaxStreams != 4 || w.MaxMessageBytes != 8192 {
		t.Errorf("web = %+v", w)
	}
	if got := cfg.Describe(); !strings.Contains(got, "web: 2 users (alice, bob)") || !strings.Contains(got, "at most 20 conversations, 4 live pages, 8192-byte messages") || strings.Contains(got, "0123456789") {
		t.Errorf("Describe:\n%s", got)
	}

	for _, tc := range []struct {
		name string
		body string
		vars map[string]string
		want []string
	}{
		{
			name: "without http.listen",
			body: "channels:\n  web:\n    enabled: true\n    users: {alice: alice-token-0123456789}\n",
			want: []string{"FILE:3: channels.web.enabled is true but http.listen is empty: the web channel's pages are served by the HTTP server; set http.listen, e.g. 127.0.0.1:8080"},
		},
		{
			name: "a token from an unset variable",
			body: "http: {listen: \":0\"}\nchannels:\n  web:\n    enabled: true\n    users:\n      alice: ${WEB_ALICE}\n",
			want: []string{"FILE:5: channels.web.users.alice has an empty token: set WEB_ALICE"},
		},
		{
			name: "every user's unset variable",
			body: "http: {listen: \":0\"}\nchannels:\n  web:\n    enabled: true\n    users:\n      alice: ${WEB_ALICE}\n      bob: ${WEB_BOB}\n",
			want: []string{"FILE:5: channels.web.users.alice has an empty token: set WEB_ALICE", "FILE:5: channels.web.users.bob has an empty token: set WEB_BOB"},
		},
		{
			name: "a short token",
			body: "http: {listen: \":0\"}\nchannels:\n  web:\n    enabled: true\n    users:\n      alice: ${WEB_ALICE}\n",
			vars: map[string]string{"WEB_ALICE": "hunter2"},
			want: []string{"FILE:5: channels.web.users.alice has a token shorter than 16 characters"},
		},
		{
			name: "a malformed reference in a token",
			body: "http: {listen: \":0\"}\nchannels:\n  web:\n    enabled: true\n    users:\n      alice: ${WEB ALICE}\n",
			want: []string{"FILE:5: channels.web.users.alice has a malformed ${...} reference: write ${NAME}", "FILE:5: channels.web.users.alice *"},
		},
		{
			name: "users of the wrong shape",
			body: "channels:\n  web:\n    users: [alice]\n",
			want: []string{`FILE:3: channels.web.users: expected map[string]string, got a list`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, tc.vars)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			for i := range got {
				if p, ok := strings.CutSuffix(tc.want[i], "*"); ok && strings.HasPrefix(got[i], p) || got[i] == tc.want[i] {
					continue
				}
				t.Errorf("problem %d\n got %q\nwant %q", i, got[i], tc.want[i])
			}
			if strings.Contains(strings.Join(got, "\n"), "hunter2") {
				t.Errorf("a token is shown: %q", got)
			}
		})
	}
}
