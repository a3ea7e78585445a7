package main

import "testing"

// TestWebhookModesNeedTheHTTPServer: a channel that receives over HTTP is a config error
// without http.listen, and Telegram's webhook also needs http.public_url.
func TestWebhookModesNeedTheHTTPServer(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		vars       map[string]string
		want       []string
	}{
		{
			name: "telegram webhook without the server",
			body: "channels:\n  telegram: {enabled: true, token: x, mode: webhook, webhook_secret: s3cret}\n",
			want: []string{
				"FILE:2: channels.telegram.mode is webhook but http.listen is empty: the platform delivers to plangate's HTTP server; set http.listen (and http.public_url)",
				"FILE:2: channels.telegram.mode is webhook but http.public_url is empty: set it to the HTTPS address Telegram reaches (ports 443, 80, 88 or 8443)",
			},
		},
		{
			name: "slack http without the server",
			body: "channels:\n  slack: {enabled: true, bot_token: xoxb-1, mode: http, signing_secret: s}\n",
			want: []string{"FILE:2: channels.slack.mode is http but http.listen is empty: the platform delivers to plangate's HTTP server; set http.listen (and http.public_url)"},
		},
		{
			name: "discord http interactions without the server",
			body: "channels:\n  discord: {enabled: true, token: x, application_id: \"1\", interactions: http, public_key: \"" +
				"e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5e9c5\"}\n",
			want: []string{"FILE:2: channels.discord.interactions is http but http.listen is empty: the platform delivers to plangate's HTTP server; set http.listen (and http.public_url)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, tc.vars)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("problem %d\n got %q\nwant %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestWebhookModeWithTheHTTPServerLoads(t *testing.T) {
	body := "http: {listen: \"127.0.0.1:0\", public_url: \"https://bot.example.com\"}\nchannels:\n  telegram: {enabled: true, token: x, mode: webhook, webhook_secret: s3cret}\n"
	if _, err := LoadConfig(writeConfig(t, body), env(nil)); err != nil {
		t.Fatalf("a webhook with http.listen and http.public_url: %v", err)
	}
}
