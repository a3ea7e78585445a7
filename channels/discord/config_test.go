package discord

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/plangate/plangate/channels/channeltest"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"enabled with a token", func(c *Config) { c.Enabled, c.Token = true, "Bot SECRET" }, nil},
		{"disabled without a token", func(c *Config) { c.Token = "" }, nil},
		{"everything wrong", func(c *Config) {
			c.Enabled, c.Token, c.LongReplyAsFile, c.APIURL = true, "", -1, "/relative"
		}, []string{
			"long_reply_as_file is -1: use 0 (never) or a character count",
			"api_url is not an http:// or https:// URL",
			"token is empty: set token",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.edit(&c)
			if got := channeltest.Problems(t, c.Validate()); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Validate() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
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
