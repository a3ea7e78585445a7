package telegram

import (
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// Config configures the Telegram channel. It is also the channels.telegram section of the
// config file, decoded strictly by its yaml tags; a new option is a field here, its default
// in Defaults, its check in Validate and its line in the README.
type Config struct {
	// Enabled runs the bot in `plangate serve`; New does not look at it.
	Enabled bool   `yaml:"enabled"`
	Token   string `yaml:"token"` // the bot token; secret: never logged, never part of an error
	// APIURL is the Bot API server: "" = the public one, else a self-hosted server or a
	// local fake.
	APIURL       string  `yaml:"api_url"`
	AllowedChats []int64 `yaml:"allowed_chats"` // chat ids the bot answers in; empty = all
	// RequireMentionInGroups: in groups only /plan commands, mentions of the bot and
	// replies to its messages are handled. Defaults sets it to true.
	RequireMentionInGroups bool `yaml:"require_mention_in_groups"`
	// LongReplyAsFile sends a reply longer than this many characters as a reply.md
	// document with a short caption; 0 = never.
	LongReplyAsFile int           `yaml:"long_reply_as_file"`
	PollTimeout     time.Duration `yaml:"poll_timeout"` // long-poll wait; 0 = 50s
	// Mode is how updates arrive: "polling" (getUpdates, the default) or "webhook"
	// (Telegram POSTs them to http.public_url + /webhooks/telegram); "" = polling.
	Mode string `yaml:"mode"`
	// WebhookSecret is the secret_token Telegram sends in every webhook request's
	// X-Telegram-Bot-Api-Secret-Token header; secret. Required in webhook mode.
	WebhookSecret string `yaml:"webhook_secret"`
	// PublicURL is http.public_url, filled in by serve (not a key of this section); Run
	// checks it in webhook mode.
	PublicURL string `yaml:"-"`
	// HTTPClient is optional. Its Timeout, if set, must exceed PollTimeout.
	HTTPClient *http.Client `yaml:"-"`
}

// Defaults is the section a config file that leaves it out gets. The token is a ${VAR}
// reference, which the config loader expands.
func Defaults() Config {
	return Config{
		Token:                  "${TELEGRAM_BOT_TOKEN}",
		RequireMentionInGroups: true,
		LongReplyAsFile:        12000,
		PollTimeout:            defaultPollTimeout,
		WebhookSecret:          "${TELEGRAM_WEBHOOK_SECRET}",
	}
}

// Validate checks the values the YAML types cannot; every problem is a *conf.KeyError
// naming its key. The token is required only when the channel is enabled.
func (c Config) Validate() error {
	var errs []error
	if c.PollTimeout < time.Second || c.PollTimeout > 5*time.Minute {
		errs = append(errs, conf.Invalid("poll_timeout", "is %s: it must be between 1s and 5m", c.PollTimeout))
	}
	errs = append(errs, channels.CheckPlatform(c.Enabled, "token", c.Token, c.APIURL, c.LongReplyAsFile)...)
	switch c.Mode {
	case "", ModePolling:
	case ModeWebhook:
		errs = append(errs, channels.ModeSecret(c.Enabled, "webhook_secret", c.WebhookSecret, ModeWebhook, "TELEGRAM_WEBHOOK_SECRET"))
	default:
		errs = append(errs, conf.Invalid("mode", "is %q: it must be polling or webhook", c.Mode))
	}
	if c.Mode == ModeWebhook && c.WebhookSecret != "" && !secretToken.MatchString(c.WebhookSecret) {
		errs = append(errs, conf.Invalid("webhook_secret", "must be 1 to 256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule for secret_token)"))
	}
	return errors.Join(errs...)
}

// Describe summarises the channel for `plangate config check`: whether the token is set,
// never the token.
func (c Config) Describe() string {
	mode := ""
	if c.Mode == ModeWebhook {
		mode = ", webhook, secret " + channels.SetOrNot(c.WebhookSecret)
	}
	return channels.Summary(Name, "token", c.Token, mode, c.APIURL)
}

// The values of mode.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// secretToken is Telegram's rule for setWebhook's secret_token.
var secretToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
