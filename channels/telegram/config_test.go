package telegram

import (
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/plangate/plangate/channels/channeltest"
)

func TestConfigValidate(t *testing.T) {
	channeltest.RunValidate(t, Defaults, []channeltest.ValidateCase[Config]{
		{Name: "defaults", Edit: func(*Config) {}},
		{Name: "enabled with a token", Edit: func(c *Config) { c.Enabled, c.Token = true, "123:SECRET" }},
		{Name: "disabled without a token", Edit: func(c *Config) { c.Token = "" }},
		{Name: "enabled without a token", Edit: func(c *Config) { c.Enabled, c.Token = true, "" },
			Want: []string{"token is empty: set token"}},
		{Name: "poll timeout too short", Edit: func(c *Config) { c.PollTimeout = 500 * time.Millisecond },
			Want: []string{"poll_timeout is 500ms: it must be between 1s and 5m"}},
		{Name: "poll timeout too long", Edit: func(c *Config) { c.PollTimeout = 10 * time.Minute },
			Want: []string{"poll_timeout is 10m0s: it must be between 1s and 5m"}},
		{Name: "webhook with a secret", Edit: func(c *Config) { c.Enabled, c.Token, c.Mode, c.WebhookSecret = true, "1:S", ModeWebhook, "s3cr3t_-X" }},
		{Name: "webhook without a secret", Edit: func(c *Config) { c.Enabled, c.Token, c.Mode, c.WebhookSecret = true, "1:S", ModeWebhook, "" },
			Want: []string{"webhook_secret is not set: mode webhook needs it (set TELEGRAM_WEBHOOK_SECRET)"}},
		{Name: "webhook secret with a bad character", Edit: func(c *Config) { c.Mode, c.WebhookSecret = ModeWebhook, "a b" },
			Want: []string{"webhook_secret must be 1 to 256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule for secret_token)"}},
		{Name: "unknown mode", Edit: func(c *Config) { c.Mode = "push" },
			Want: []string{`mode is "push": it must be polling or webhook`}},
		{Name: "everything wrong", Edit: func(c *Config) {
			c.Enabled, c.Token, c.PollTimeout, c.LongReplyAsFile, c.APIURL = true, "", 0, -1, "ftp://x"
		}, Want: []string{
			"poll_timeout is 0s: it must be between 1s and 5m",
			"long_reply_as_file is -1: use 0 (never) or a character count",
			"api_url is not an http:// or https:// URL",
			"token is empty: set token",
		}},
	})
}

func TestConfigDecodesOverDefaults(t *testing.T) {
	c := Defaults()
	src := "enabled: true\nallowed_chats: [-100, 42]\nlong_reply_as_file: 0\npoll_timeout: 20s\n"
	if err := yaml.UnmarshalWithOptions([]byte(src), &c, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.LongReplyAsFile != 0 || c.PollTimeout != 20*time.Second || len(c.AllowedChats) != 2 || c.AllowedChats[0] != -100 {
		t.Errorf("decoded %+v", c)
	}
	if !c.RequireMentionInGroups || c.Token != "${TELEGRAM_BOT_TOKEN}" {
		t.Errorf("keys the file leaves out lost their defaults: %+v", c)
	}
	if err := yaml.UnmarshalWithOptions([]byte("httpclient: {}\n"), &c, yaml.Strict()); err == nil {
		t.Error("the HTTP client was accepted from the file")
	}
}

func TestConfigDescribe(t *testing.T) {
	c := Config{Token: "123:SECRET", APIURL: "http://user:SECRET@127.0.0.1:8081/bot?k=SECRET"}
	if got, want := c.Describe(), "telegram (token set, api http://127.0.0.1:8081/bot)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	if got, want := (Config{}).Describe(), "telegram (token not set)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
