// Package discord is the Discord channel, built on github.com/bwmarrin/discordgo. It listens
// on the gateway websocket (guild messages, direct messages, message content), turns
// mentions, direct messages, typed /plan commands, the native /plan application command,
// button clicks and the Revise modal into core.Message values, and delivers replies as
// Discord markdown: split at 2000 characters without breaking code blocks (or sent as a
// file above a configurable size), plans with their markdown file attached and Accept /
// Revise / Auto buttons, progress as one message edited in place. Every message the bot
// sends carries an empty allowed_mentions, so model output can never ping anyone.
//
// Every interaction is acknowledged at once, off the gateway goroutine, so Discord's three
// seconds are never at risk; the engine's first reply to it (Reply.InReplyTo) then edits
// the deferred response or follows it up. Discord never delivers an interaction again, so
// one the engine handles is saved in a durable inbox before it is acknowledged (inbox.go).
// With interactions http they arrive on POST /webhooks/discord (RegisterHTTP), verified
// with the application's Ed25519 key, the deferred response being the HTTP answer. Run is
// gateway and endpoint; with several replicas RunInteractions serves the endpoint on every
// one and RunGateway runs only on the replica elected for the gateway.
//
// discordgo reads the API base from package variables shared by every session in the
// process, so api_url is applied by a transport that rewrites each request's scheme and
// host. The bot token is scrubbed from every error that leaves this package.
package discord

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Name is the channel name in core.Address.Channel.
const Name = "discord"

// EditHint is how a person sends an edited plan file back here (engine.Config.EditHints).
const EditHint = "attach it to a reply to the plan's message"

// State is where the adapter keeps what must survive a restart: which messages carry which
// approval's buttons. *store.Store satisfies it.
type State = channels.State

// tuning holds the limits that are Discord's, not the operator's; tests shrink them.
type tuning struct {
	retry        channels.Patience // per REST call, for network errors and 5xx (discordgo waits out 429s itself)
	ackTime      time.Duration     // bound on an interaction callback (Discord allows 3s)
	ackWait      time.Duration     // how long a reply waits for its interaction's callback to finish
	storeWait    time.Duration     // bound on saving an interaction before its callback (inbox.go)
	reconnectMin time.Duration     // first wait before reopening the gateway; doubles
	reconnectMax time.Duration
}

func defaultTuning() tuning {
	retry := channels.DefaultPatience()
	retry.Attempts = 4
	return tuning{
		retry:        retry,
		ackTime:      2500 * time.Millisecond,
		ackWait:      5 * time.Second,
		storeWait:    1500 * time.Millisecond,
		reconnectMin: time.Second,
		reconnectMax: 2 * time.Minute,
	}
}

// Channel is the Discord adapter. Send, Edit and Typing may be called from any goroutine.
type Channel struct {
	cfg     Config
	tune    tuning
	st      State
	log     *slog.Logger
	s       *discordgo.Session
	token   string // without "Bot "
	allowed map[string]bool

	botID   string // the bot's user id: mention detection and the State account
	botName string

	mu      sync.Mutex
	appID   string                // cfg.ApplicationID, else READY's
	pending map[string]*pendingIx // interactions whose outcome is still to be shown, by id

	seen      *recent
	chans     *channelCache
	approvals *channels.Ledger[sentMsg] // which messages carry which approval's buttons
	gateHook  func(time.Duration, bool) // tests: time spent on the gateway goroutine per event

	pubKey ed25519.PublicKey          // interactions http: verifies every request
	disp   atomic.Pointer[dispatcher] // the running Run's or RunInteractions', for the interactions route
	health *channels.Health           // the gateway connection, for Ready

	now   func() time.Time           // cfg.Now or time.Now: when an interaction's token expires
	boxMu sync.Mutex                 // guards box
	box   *ixInbox                   // interactions saved before their callback (inbox.go)
	ixd   atomic.Pointer[dispatcher] // the dispatcher interactions go to (replays, AdoptInbox)
}

// New prepares a session and asks Discord who the bot is (GET /users/@me): its id
// recognises mentions and keys the saved state, so a new bot starts fresh. Run opens the
// gateway. A nil log discards.
func New(ctx context.Context, cfg Config, st State, log *slog.Logger) (*Channel, error) {
	return newChannel(ctx, cfg, st, log, defaultTuning())
}

func newChannel(ctx context.Context, cfg Config, st State, log *slog.Logger, tune tuning) (*Channel, error) {
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	if token == "" {
		return nil, errors.New("starting discord: no bot token configured")
	}
	if st == nil {
		return nil, errors.New("starting discord: no state store")
	}
	hc, err := rewritingClient(cfg.HTTPClient, cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("starting discord: %w", err)
	}
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, errors.New("starting discord: creating the session failed")
	}
	s.Client = hc
	s.Identify.Intents = intents
	// Run reopens the gateway itself, with a backoff that ends with its context; the
	// library's own loop cannot be stopped.
	s.ShouldReconnectOnError = false
	// Handlers run on the gateway goroutine, in Discord's order; they only queue work.
	s.SyncEvents = true
	// The library logs through the process-wide standard logger; what matters reaches
	// this package as an error or an event and is logged through slog.
	s.LogLevel = -1
	s.StateEnabled = true

	c := &Channel{
		cfg:     cfg,
		tune:    tune,
		st:      st,
		log:     channels.OrDiscard(log).With("channel", Name),
		s:       s,
		token:   token,
		allowed: make(map[string]bool, len(cfg.AllowedChannels)),
		appID:   strings.TrimSpace(cfg.ApplicationID),
		pending: map[string]*pendingIx{},
		seen:    newRecent(8192),
		chans:   newChannelCache(),
		health:  channels.NewHealth(Name, "gateway not connected"),
		now:     cfg.Now,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if cfg.Interactions == InteractionsHTTP {
		if c.pubKey, err = parsePublicKey(cfg.PublicKey); err != nil {
			return nil, fmt.Errorf("starting discord: channels.discord.public_key %w", err)
		}
	}
	for _, id := range cfg.AllowedChannels {
		c.allowed[strings.TrimSpace(id)] = true
	}
	var me *discordgo.User
	err = c.do(ctx, "asking who the bot is", func(opts ...discordgo.RequestOption) error {
		var err error
		me, err = s.User("@me", opts...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting discord: %w", explainAuth(err))
	}
	c.botID, c.botName = me.ID, me.Username
	c.log = c.log.With("bot", c.botID)
	c.approvals = channels.NewLedger[sentMsg](st, Name, c.botID, c.log)
	return c, nil
}

// intents are what the bot listens to. Message content is privileged: without it, guild
// messages arrive with empty text, except those that mention the bot. Guilds brings the
// channel and thread lists that tell a thread from a channel without a REST call.
const intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentMessageContent

// explainAuth turns the answer to a bad token into one line an operator can act on.
func explainAuth(err error) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		return fmt.Errorf("discord rejected the bot token; check channels.discord.token: %w", err)
	}
	return err
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// BotID is the bot's Discord user id.
func (c *Channel) BotID() string { return c.botID }

// applicationID is the application the /plan command belongs to.
func (c *Channel) applicationID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.appID != "" {
		return c.appID
	}
	return c.botID // the application of a bot has the bot's id
}

// allowedChannel applies AllowedChannels to a conversation.
func (c *Channel) allowedChannel(a core.Address) bool {
	if len(c.allowed) == 0 {
		return true
	}
	return c.allowed[a.Chat] || (a.Thread != "" && c.allowed[a.Thread])
}

// target is the Discord channel a reply to a goes to: its thread (a channel of its own),
// else its channel.
func target(a core.Address) (string, error) {
	if a.Channel != Name {
		return "", fmt.Errorf("address of channel %q is not discord's", a.Channel)
	}
	if a.Thread != "" {
		return a.Thread, nil
	}
	if a.Chat == "" {
		return "", errors.New("address has no discord channel id")
	}
	return a.Chat, nil
}
