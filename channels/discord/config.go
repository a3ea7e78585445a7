package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// Config configures the Discord channel. It is also the channels.discord section of the
// config file, decoded strictly by its yaml tags; a new option is a field here, its default
// in Defaults, its check in Validate and its line in the README.
type Config struct {
	// Enabled runs the bot in `plangate serve`; New does not look at it.
	Enabled bool `yaml:"enabled"`
	// Token is the bot token, with or without "Bot "; secret: never logged, never part of
	// an error.
	Token string `yaml:"token"`
	// ApplicationID is the application whose /plan command is registered; "" = the one the
	// gateway names at start-up.
	ApplicationID string `yaml:"application_id"`
	// APIURL replaces the scheme and host of every REST call (a proxy or a local fake);
	// "" = Discord itself. The gateway URL is then whatever GET /gateway there answers.
	APIURL string `yaml:"api_url"`
	// GuildIDs: register /plan in these guilds, where it appears at once; empty = globally.
	GuildIDs []string `yaml:"guild_ids"`
	// AllowedChannels are the channel ids the bot answers in (a thread counts as its
	// parent channel; a DM channel is one too); empty = all.
	AllowedChannels []string `yaml:"allowed_channels"`
	// LongReplyAsFile sends a reply longer than this many characters as reply.md with a
	// short message; 0 = never (long replies are split).
	LongReplyAsFile int `yaml:"long_reply_as_file"`
	// Interactions is how slash commands, buttons and modals arrive: "gateway" (the
	// default) or "http" (Discord POSTs them to http.public_url + /webhooks/discord, the
	// application's Interactions Endpoint URL); "" = gateway. Messages always come over
	// the gateway.
	Interactions string `yaml:"interactions"`
	// PublicKey is the application's public key (General Information, 64 hex digits),
	// which verifies the Ed25519 signature of every interaction request in mode http.
	PublicKey string `yaml:"public_key"`
	// HTTPClient is optional; its Timeout is kept and its transport wrapped.
	HTTPClient *http.Client `yaml:"-"`
	// Now is the clock that tells whether a saved interaction's token is still valid
	// after a restart; nil = time.Now.
	Now func() time.Time `yaml:"-"`
}

// Defaults is the section a config file that leaves it out gets. The token is a ${VAR}
// reference, which the config loader expands.
func Defaults() Config {
	return Config{Token: "${DISCORD_BOT_TOKEN}", LongReplyAsFile: 6000}
}

// Validate checks the values the YAML types cannot; every problem is a *conf.KeyError
// naming its key. The token is required only when the channel is enabled.
func (c Config) Validate() error {
	errs := channels.CheckPlatform(c.Enabled, "token", c.Token, c.APIURL, c.LongReplyAsFile)
	switch c.Interactions {
	case "", InteractionsGateway:
		if c.PublicKey != "" {
			if _, err := parsePublicKey(c.PublicKey); err != nil {
				errs = append(errs, conf.Invalid("public_key", "%v", err))
			}
		}
	case InteractionsHTTP:
		if _, err := parsePublicKey(c.PublicKey); err != nil {
			errs = append(errs, conf.Invalid("public_key", "%v (interactions http needs the application's public key)", err))
		}
	default:
		errs = append(errs, conf.Invalid("interactions", "is %q: it must be gateway or http", c.Interactions))
	}
	return errors.Join(errs...)
}

// The values of interactions.
const (
	InteractionsGateway = "gateway"
	InteractionsHTTP    = "http"
)

// parsePublicKey reads the hex Ed25519 public key of the Developer Portal.
func parsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("is not set")
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("is not 64 hex digits (an Ed25519 public key)")
	}
	return ed25519.PublicKey(b), nil
}

// Describe summarises the channel for `plangate config check`: whether the token is set,
// never the token.
func (c Config) Describe() string {
	ix := ""
	if c.Interactions == InteractionsHTTP {
		ix = ", interactions over http"
	}
	return channels.Summary(Name, "token", c.Token, ix, c.APIURL)
}
