package slack

import (
	"errors"
	"net/http"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// Config configures the Slack channel (Socket Mode needs both tokens). It is also the
// channels.slack section of the config file, decoded strictly by its yaml tags; a new option
// is a field here, its default in Defaults, its check in Validate and its line in the README.
type Config struct {
	// Enabled runs the app in `plangate serve`; New does not look at it.
	Enabled  bool   `yaml:"enabled"`
	BotToken string `yaml:"bot_token"` // xoxb-…: the Web API; secret: never logged, never part of an error
	AppToken string `yaml:"app_token"` // xapp-…: Socket Mode (connections:write); secret too
	// Mode is how events arrive: "socket" (Socket Mode, the default: no public URL) or
	// "http" (the Events API, slash commands and interactivity POST to /webhooks/slack/…);
	// "" = socket.
	Mode string `yaml:"mode"`
	// SigningSecret verifies the requests of mode http (Basic Information → App
	// Credentials); secret.
	SigningSecret string `yaml:"signing_secret"`
	// APIURL is the Web API base: "" = Slack's, else a local fake. A missing trailing "/"
	// is added (the library needs it).
	APIURL string `yaml:"api_url"`
	// AllowedChannels are the conversation ids (C…, G…, D…) the bot answers in; empty = all.
	AllowedChannels []string `yaml:"allowed_channels"`
	// LongReplyAsFile sends a reply longer than this many characters as reply.md with its
	// first line as the comment; 0 = never (long replies are split into messages).
	LongReplyAsFile int `yaml:"long_reply_as_file"`
	// HTTPClient is optional; its Timeout bounds every Web API request.
	HTTPClient *http.Client `yaml:"-"`
}

// Defaults is the section a config file that leaves it out gets. The tokens are ${VAR}
// references, which the config loader expands.
func Defaults() Config {
	return Config{
		BotToken:        "${SLACK_BOT_TOKEN}",
		AppToken:        "${SLACK_APP_TOKEN}",
		SigningSecret:   "${SLACK_SIGNING_SECRET}",
		LongReplyAsFile: 20000,
	}
}

// Validate checks the values the YAML types cannot; every problem is a *conf.KeyError
// naming its key. Both tokens are required only when the channel is enabled.
func (c Config) Validate() error {
	errs := channels.CheckPlatform(c.Enabled, "bot_token", c.BotToken, c.APIURL, c.LongReplyAsFile)
	switch c.Mode {
	case "", ModeSocket:
		if c.Enabled && c.AppToken == "" {
			errs = append(errs, conf.Unset("app_token"))
		}
	case ModeHTTP:
		errs = append(errs, channels.ModeSecret(c.Enabled, "signing_secret", c.SigningSecret, ModeHTTP, "SLACK_SIGNING_SECRET"))
	default:
		errs = append(errs, conf.Invalid("mode", "is %q: it must be socket or http", c.Mode))
	}
	return errors.Join(errs...)
}

// Describe summarises the channel for `plangate config check`: whether each token is set,
// never a token.
func (c Config) Describe() string {
	second := ", app token " + channels.SetOrNot(c.AppToken)
	if c.Mode == ModeHTTP {
		second = ", http, signing secret " + channels.SetOrNot(c.SigningSecret)
	}
	return channels.Summary(Name, "bot token", c.BotToken, second, c.APIURL)
}

// The values of mode.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)
