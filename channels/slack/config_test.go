package slack

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/plangate/plangate/channels/channeltest"
)

func TestConfigValidate(t *testing.T) {
	channeltest.RunValidate(t, Defaults, []channeltest.ValidateCase[Config]{
		{Name: "defaults", Edit: func(*Config) {}},
		{Name: "enabled with both tokens", Edit: func(c *Config) { c.Enabled, c.BotToken, c.AppToken = true, "xoxb-SECRET", "xapp-SECRET" }},
		{Name: "disabled without tokens", Edit: func(c *Config) { c.BotToken, c.AppToken = "", "" }},
		{Name: "enabled without the app token", Edit: func(c *Config) { c.Enabled, c.BotToken, c.AppToken = true, "xoxb-SECRET", "" },
			Want: []string{"app_token is empty: set app_token"}},
		{Name: "http without an app token", Edit: func(c *Config) {
			c.Enabled, c.BotToken, c.AppToken, c.Mode, c.SigningSecret = true, "xoxb-SECRET", "", ModeHTTP, "SECRETsign"
		}},
		{Name: "http without a signing secret", Edit: func(c *Config) {
			c.Enabled, c.BotToken, c.Mode, c.SigningSecret = true, "xoxb-SECRET", ModeHTTP, ""
		}, Want: []string{"signing_secret is not set: mode http needs it (set SLACK_SIGNING_SECRET)"}},
		{Name: "unknown mode", Edit: func(c *Config) { c.Mode = "rtm" },
			Want: []string{`mode is "rtm": it must be socket or http`}},
		{Name: "everything wrong", Edit: func(c *Config) {
			c.Enabled, c.BotToken, c.AppToken, c.LongReplyAsFile, c.APIURL = true, "", "", -5, "slack.com/api"
		}, Want: []string{
			"long_reply_as_file is -5: use 0 (never) or a character count",
			"api_url is not an http:// or https:// URL",
			"bot_token is empty: set bot_token",
			"app_token is empty: set app_token",
		}},
	})
}

func TestConfigDecodesOverDefaults(t *testing.T) {
	c := Defaults()
	src := "enabled: true\nallowed_channels: [C1, D2]\napi_url: http://127.0.0.1:9/api/\n"
	if err := yaml.UnmarshalWithOptions([]byte(src), &c, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.APIURL != "http://127.0.0.1:9/api/" || strings.Join(c.AllowedChannels, ",") != "C1,D2" {
		t.Errorf("decoded %+v", c)
	}
	if c.LongReplyAsFile != 20000 || c.BotToken != "${SLACK_BOT_TOKEN}" || c.AppToken != "${SLACK_APP_TOKEN}" {
		t.Errorf("keys the file leaves out lost their defaults: %+v", c)
	}
	if err := yaml.UnmarshalWithOptions([]byte("bot_tokn: x\n"), &c, yaml.Strict()); err == nil {
		t.Error("an unknown key was accepted")
	}
}

func TestConfigDescribe(t *testing.T) {
	c := Config{BotToken: "xoxb-SECRET", APIURL: "https://proxy.example/api/?token=SECRET"}
	if got, want := c.Describe(), "slack (bot token set, app token not set, api https://proxy.example/api/)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
