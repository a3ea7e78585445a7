package discord

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/plangate/plangate/channels/channeltest"
)

func TestConfigValidate(t *testing.T) {
	channeltest.RunValidate(t, Defaults, []channeltest.ValidateCase[Config]{
		{Name: "defaults", Edit: func(*Config) {}},
		{Name: "enabled with a token", Edit: func(c *Config) { c.Enabled, c.Token = true, "Bot SECRET" }},
		{Name: "disabled without a token", Edit: func(c *Config) { c.Token = "" }},
		{Name: "interactions http with a key", Edit: func(c *Config) {
			c.Interactions, c.PublicKey = InteractionsHTTP, "e9c5b1b3d0d1c2f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3"
		}},
		{Name: "interactions http without a key", Edit: func(c *Config) { c.Interactions = InteractionsHTTP },
			Want: []string{"public_key is not set (interactions http needs the application's public key)"}},
		{Name: "a key that is not hex", Edit: func(c *Config) { c.Interactions, c.PublicKey = InteractionsHTTP, "xyz" },
			Want: []string{"public_key is not 64 hex digits (an Ed25519 public key) (interactions http needs the application's public key)"}},
		{Name: "unknown interactions", Edit: func(c *Config) { c.Interactions = "websocket" },
			Want: []string{`interactions is "websocket": it must be gateway or http`}},
		{Name: "everything wrong", Edit: func(c *Config) {
			c.Enabled, c.Token, c.LongReplyAsFile, c.APIURL = true, "", -1, "/relative"
		}, Want: []string{
			"long_reply_as_file is -1: use 0 (never) or a character count",
			"api_url is not an http:// or https:// URL",
			"token is empty: set token",
		}},
	})
}

func TestConfigDecodesOverDefaults(t *testing.T) {
	c := Defaults()
	src := "enabled: true\napplication_id: '123'\nguild_ids: ['1', '2']\nallowed_channels: ['3']\n"
	if err := yaml.UnmarshalWithOptions([]byte(src), &c, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.ApplicationID != "123" || strings.Join(c.GuildIDs, ",") != "1,2" || strings.Join(c.AllowedChannels, ",") != "3" {
		t.Errorf("decoded %+v", c)
	}
	if c.LongReplyAsFile != 6000 || c.Token != "${DISCORD_BOT_TOKEN}" {
		t.Errorf("keys the file leaves out lost their defaults: %+v", c)
	}
}

func TestConfigDescribe(t *testing.T) {
	c := Config{Token: "SECRET"}
	if got, want := c.Describe(), "discord (token set)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
