// Package slack is the Slack channel, built on github.com/slack-go/slack. It receives events
// over Socket Mode (a websocket opened with the app-level token: no public URL needed) or,
// in mode http, as signed Events API, slash command and interactivity requests
// (RegisterHTTP), both stored and queued through the same accept. It talks to the Web API
// with the bot token.
//
// Every session lives in a thread: a mention or a direct message at top level starts one,
// and the bot always answers there. The /plan slash command applies to the thread it was
// typed in when Slack says which, else to the channel's most recent session, which an
// ephemeral note names. Plans are uploaded into the thread (the v2 upload flow) next to a
// message with Accept / Revise / Auto buttons; Revise opens a modal for the feedback. After
// a decision that message says who decided and loses its buttons. A refusal that answers a
// click or a slash command is shown only to its author (an ephemeral message).
//
// Every envelope the bot handles is stored in a durable inbox before it is acknowledged
// (within Slack's 3 seconds: nothing slower, not even the sender's name, comes first),
// handed to the engine in order and replayed after a restart until handled. A message is
// identified by its channel and ts, so Slack's retries and a DM delivered as both
// message.im and app_mention are answered once. Posts are paced per channel, 429 answers
// wait Retry-After, and neither token ever appears in a log line or an error.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Name is the channel name in core.Address.Channel.
const Name = "slack"

// EditHint is how a person sends an edited plan file back here (engine.Config.EditHints).
const EditHint = "share it in the plan's thread"

// defaultAPIURL is the public Web API.
const defaultAPIURL = "https://slack.com/api/"

// State is where the adapter keeps what must survive a restart: which message carries
// which approval's buttons, and each channel's most recent session. *store.Store satisfies it.
type State = channels.State

// tuning holds the limits that are Slack's, not the operator's; tests shrink them.
type tuning struct {
	postEvery    time.Duration     // pacing per channel: about one post a second
	burst        int               // posts a channel may make at once before pacing applies
	retryUnit    time.Duration     // what one second of Retry-After is (a second at Slack)
	retry        channels.Patience // per request, 429s and 5xx included
	pingInterval time.Duration     // Socket Mode: reconnect when Slack sends no ping this long
	seenFor      time.Duration     // how long an event id is remembered against retries
}

func defaultTuning() tuning {
	return tuning{
		postEvery:    time.Second,
		burst:        3,
		retryUnit:    time.Second,
		retry:        channels.DefaultPatience(),
		pingInterval: 30 * time.Second,
		seenFor:      time.Hour, // Slack retries for about five minutes
	}
}

// Channel is the Slack adapter. Send and Edit may be called from any goroutine.
type Channel struct {
	cfg  Config
	tune tuning
	st   State
	log  *slog.Logger
	api  *slackgo.Client

	team      string // team id: Address.Account and the State account
	botUser   string // the bot's user id, to ignore its own messages and strip its mention
	workspace string // https://team.slack.com/, for links to threads

	allowed   channels.AllowList[string]
	pace      *channels.Pacer[string]
	seen      *seenSet
	waiting   *interactions
	approvals *channels.Ledger[sentMsg] // which messages carry which approval's buttons

	recentMu sync.Mutex
	recent   map[string]string // channel -> thread last saved as its most recent session
	namesMu  sync.Mutex
	names    map[string]cachedName    // user id -> display name
	lookups  map[string]chan struct{} // user id -> closed when its users.info call ends
	nameWait time.Duration            // how long a message waits for its sender's name

	disp    atomic.Pointer[dispatcher] // the last Run's, for Drain and the HTTP routes
	dropped channels.Dropped           // events received before, for /metrics
	health  *channels.Health           // what Ready reports

	storeLogMu sync.Mutex
	storeLogAt time.Time // when a failed store was last logged
}

// NoteInbound makes fn hear of every event dropped as received before (channels.InboundNoter).
func (c *Channel) NoteInbound(fn func(outcome string)) { c.dropped.Set(fn) }

// New checks the bot token with auth.test, which also names the workspace, whose team id
// keys every session and all saved state, and the bot user. Run uses the app token. A nil
// log discards.
func New(ctx context.Context, cfg Config, st State, log *slog.Logger) (*Channel, error) {
	return newChannel(ctx, cfg, st, log, defaultTuning())
}

func newChannel(ctx context.Context, cfg Config, st State, log *slog.Logger, tune tuning) (*Channel, error) {
	switch {
	case cfg.BotToken == "":
		return nil, errors.New("starting slack: no bot token configured (channels.slack.bot_token)")
	case cfg.AppToken == "" && cfg.Mode != ModeHTTP:
		return nil, errors.New("starting slack: no app-level token configured (channels.slack.app_token)")
	case cfg.SigningSecret == "" && cfg.Mode == ModeHTTP:
		return nil, errors.New("starting slack: mode http needs a signing secret (channels.slack.signing_secret)")
	case st == nil:
		return nil, errors.New("starting slack: no state store")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = defaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: tune.retry.AttemptTime}
	}
	c := &Channel{
		cfg:     cfg,
		tune:    tune,
		st:      st,
		log:     channels.OrDiscard(log).With("channel", Name),
		allowed: channels.NewAllowList(cfg.AllowedChannels),
		pace:    newPacer(tune),
		seen:    newSeenSet(tune.seenFor),
		waiting: newInteractions(),
		recent:  map[string]string{},
		names:   map[string]cachedName{},
		lookups: map[string]chan struct{}{},
		// A message waits this long for users.info, then goes on with the id: the
		// dispatcher is serial, so a slow lookup must not hold up everyone's messages.
		nameWait: time.Second,
		health:   channels.NewHealth(Name, "not started"),
	}
	c.api = slackgo.New(cfg.BotToken,
		slackgo.OptionAPIURL(cfg.APIURL),
		slackgo.OptionAppLevelToken(cfg.AppToken),
		slackgo.OptionHTTPClient(hc),
		slackgo.OptionLog(libLog{c}),
	)
	var who *slackgo.AuthTestResponse
	err := c.do(ctx, "", false, "auth.test", func(ctx context.Context) error {
		var err error
		who, err = c.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting slack: checking the bot token: %w", explainAuth(err, "channels.slack.bot_token"))
	}
	if who.TeamID == "" || who.UserID == "" {
		return nil, errors.New("starting slack: auth.test named no team or bot user")
	}
	c.team, c.botUser, c.workspace = who.TeamID, who.UserID, who.URL
	c.log = c.log.With("team", c.team)
	c.approvals = channels.NewLedger[sentMsg](st, Name, c.team, c.log)
	return c, nil
}

// explainAuth turns Slack's answer to a bad token into one line an operator can act on,
// naming the setting that holds the token.
func explainAuth(err error, setting string) error {
	var se slackgo.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "invalid_auth", "not_authed", "token_revoked", "account_inactive", "token_expired", "not_allowed_token_type":
			return fmt.Errorf("slack refused the token (%s); check %s", se.Err, setting)
		}
	}
	return err
}

// Ready is nil while the app receives events (Socket Mode connected, or in mode http Run
// taking requests) and storing them works; otherwise an error naming the problem.
func (c *Channel) Ready() error { return c.health.Err() }

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// TeamID is the workspace id, the Account of every address this channel makes.
func (c *Channel) TeamID() string { return c.team }

// allowedChannel applies AllowedChannels.
func (c *Channel) allowedChannel(id string) bool {
	return id != "" && c.allowed.Allows(id)
}

// address is the conversation of a message in channel ch, in thread thread (the ts of the
// message that started it).
func (c *Channel) address(ch, thread string) core.Address {
	return core.Address{Channel: Name, Account: c.team, Chat: ch, Thread: thread}
}

// target reads the channel and thread of an address this channel made.
func target(a core.Address) (ch, thread string, err error) {
	if a.Channel != Name {
		return "", "", fmt.Errorf("address of channel %q is not slack's", a.Channel)
	}
	if a.Chat == "" {
		return "", "", errors.New("address has no slack channel id")
	}
	return a.Chat, a.Thread, nil
}

// threadLink is a link to a thread, for notes that point at one; "" without a workspace URL.
func (c *Channel) threadLink(ch, ts string) string {
	if c.workspace == "" || ts == "" {
		return ""
	}
	return strings.TrimSuffix(c.workspace, "/") + "/archives/" + ch + "/p" + strings.Replace(ts, ".", "", 1)
}

// tsTime reads a Slack timestamp ("1700000000.000100") as a time; zero if it is not one.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}
	}
	us, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err != nil {
		us = 0
	}
	return time.Unix(s, us*1000)
}

// libLog routes the library's own log lines to slog at debug, with the tokens scrubbed.
type libLog struct{ c *Channel }

func (l libLog) Output(_ int, s string) error {
	l.c.log.Debug("slack client", "msg", l.c.scrubText(strings.TrimSpace(s)))
	return nil
}
