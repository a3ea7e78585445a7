// Package telegram is the Telegram channel, built on github.com/go-telegram/bot. It receives
// updates by long polling or, in webhook mode, on POST /webhooks/telegram (RegisterHTTP),
// both feeding the same inbox and dispatcher, turns messages and button clicks into
// core.Message values and delivers replies as Telegram HTML: split at 4096 UTF-16 units,
// sent again as plain text when Telegram rejects the formatting, plans as documents with
// inline Accept / Revise / Auto buttons, progress as one message edited in place.
//
// Delivery is at least once and, with the engine's de-duplication on the update id, exactly
// once: an update is written to the store before Telegram is told it was received, and it
// stays there until the engine reports it handled, so a killed process replays it on start.
// Outgoing messages are paced per chat; 429 answers wait retry_after and 5xx or network
// failures retry with bounded backoff. The bot token is part of every request URL, so every
// error that leaves this package has it scrubbed.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// Name is the channel name in core.Address.Channel.
const Name = "telegram"

// EditHint is how a person sends an edited plan file back here (engine.Config.EditHints).
const EditHint = "send it as a document in reply to the plan's message"

// defaultPollTimeout is how long one getUpdates call waits for news at Telegram.
const defaultPollTimeout = 50 * time.Second

// State keeps what must survive a restart: the update inbox and offset, which messages
// carry which approval's buttons, open ForceReply prompts. *store.Store satisfies it.
type State = channels.State

// tuning holds the limits that are Telegram's, not the operator's; tests shrink them.
type tuning struct {
	privateEvery time.Duration     // pacing of a private chat: one message per this
	groupEvery   time.Duration     // pacing of a group: 20 a minute
	globalEvery  time.Duration     // pacing across all chats: 30 a second
	burst        int               // messages a chat may send at once before pacing applies
	retryUnit    time.Duration     // what one unit of retry_after is (a second at Telegram)
	retry        channels.Patience // per request, 429s and 5xx included; attemptTime bounds requests other than getUpdates
	toastWait    time.Duration     // how long a button's answer waits for the engine's outcome
	holdAfterErr time.Duration     // first pause after getUpdates fails; doubles up to maxBackoff
	flushDelay   time.Duration     // how long updates the engine finished wait to be saved together
	flushLocal   time.Duration     // the same for updates the adapter settled itself, whose replay would show
}

func defaultTuning() tuning {
	return tuning{
		privateEvery: time.Second,
		groupEvery:   3 * time.Second,
		globalEvery:  time.Second / 30,
		burst:        3,
		retryUnit:    time.Second,
		retry:        channels.DefaultPatience(),
		toastWait:    3 * time.Second,
		holdAfterErr: 500 * time.Millisecond,
		flushDelay:   channels.DoneSaveDelay,
		flushLocal:   100 * time.Millisecond,
	}
}

// Channel is the Telegram adapter. Send, Edit and Typing may be called from any goroutine.
type Channel struct {
	cfg   Config
	tune  tuning
	st    State
	log   *slog.Logger
	b     *bot.Bot
	http  doer
	api   string // base URL of the Bot API
	token string

	botID    int64
	account  string // botID as a string: Address.Account and the State account
	username string

	allowed   channels.AllowList[int64]
	pace      *channels.Pacer[int64]
	toasts    *toastBoard
	approvals *channels.Ledger[sentMsg] // which messages carry which approval's buttons

	stateMu sync.Mutex // serializes read-modify-write of question records

	// The poller's clock and pause, which tests replace to count calls without waiting.
	now   func() time.Time
	pause func(ctx context.Context, d time.Duration) error
	limit *logLimiter

	health *channels.Health // what Ready reports

	disp atomic.Pointer[dispatcher] // the last Run's, for Drain

	dropped channels.Dropped // redelivered updates, for /metrics
}

// NoteInbound makes fn hear of every update dropped as received before (channels.InboundNoter).
func (c *Channel) NoteInbound(fn func(outcome string)) { c.dropped.Set(fn) }

// New asks the Bot API who the bot is (getMe): its id keys every session and all saved
// state, so a new bot token starts fresh. A nil log discards.
func New(ctx context.Context, cfg Config, st State, log *slog.Logger) (*Channel, error) {
	return newChannel(ctx, cfg, st, log, defaultTuning())
}

func newChannel(ctx context.Context, cfg Config, st State, log *slog.Logger, tune tuning) (*Channel, error) {
	if cfg.Token == "" {
		return nil, errors.New("starting telegram: no bot token configured")
	}
	if st == nil {
		return nil, errors.New("starting telegram: no state store")
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = defaultPollTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	c := &Channel{
		cfg:     cfg,
		tune:    tune,
		st:      st,
		log:     channels.OrDiscard(log).With("channel", Name),
		http:    doer{c: hc},
		api:     cfg.APIURL,
		token:   cfg.Token,
		allowed: channels.NewAllowList(cfg.AllowedChats),
		pace:    newPacer(tune),
		toasts:  newToastBoard(),
		now:     time.Now,
		pause:   channels.Sleep,
		health:  channels.NewHealth(Name, "not started"),
	}
	c.limit = newLogLimiter(func() time.Time { return c.now() })
	if c.api == "" {
		c.api = "https://api.telegram.org"
	}
	opts := []bot.Option{
		bot.WithSkipGetMe(), // called below with the caller's context
		bot.WithServerURL(c.api),
		bot.WithHTTPClient(cfg.PollTimeout, c.http),
		bot.WithErrorsHandler(func(err error) { c.log.Warn("telegram client", "err", c.scrub(err)) }),
		bot.WithDebugHandler(func(string, ...any) {}),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	}
	b, err := bot.New(cfg.Token, opts...)
	if err != nil {
		return nil, fmt.Errorf("starting telegram: %w", c.scrub(err))
	}
	c.b = b

	var me *models.User
	err = c.do(ctx, 0, false, "getMe", func(ctx context.Context) error {
		var err error
		me, err = c.b.GetMe(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting telegram: asking who the bot is: %w", explainAuth(err))
	}
	c.botID = me.ID
	c.account = strconv.FormatInt(me.ID, 10)
	c.username = me.Username
	c.log = c.log.With("bot", c.account)
	c.approvals = channels.NewLedger[sentMsg](st, Name, c.account, c.log)
	return c, nil
}

// explainAuth turns the answer to a bad token into one line an operator can act on.
func explainAuth(err error) error {
	if errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
		return fmt.Errorf("telegram rejected the bot token; check channels.telegram.token: %w", err)
	}
	return err
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// BotID is the bot's Telegram user id, the Account of every address this channel makes.
func (c *Channel) BotID() int64 { return c.botID }

// Username is the bot's user name, without the @.
func (c *Channel) Username() string { return c.username }

// Run sets the command menu, replays updates received but not handled before a restart,
// then long-polls (after deleteWebhook) or, in webhook mode, registers the webhook and
// takes updates from the HTTP route, until ctx ends (returning nil). It returns an error
// only when Telegram refuses the bot for good (a revoked token).
//
// Messages are queued with the handler (the engine) in order; each update leaves the saved
// inbox when the engine reports it handled. They are queued with a context that outlives
// Run, so a shutdown lets in-flight turns finish (the caller bounds that with Engine.Wait).
func (c *Channel) Run(ctx context.Context, h channels.Handler) error {
	c.setCommands(ctx)
	in, err := c.loadInbox(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("running telegram: %w", err)
	}
	d := &dispatcher{c: c, h: h, in: in, ctx: ctx}
	c.disp.Store(d)
	for _, u := range in.replay() {
		d.dispatch(ctx, u)
	}
	if err := in.flush(context.WithoutCancel(ctx)); err != nil {
		c.log.Error("saving the update inbox", "err", err)
	}
	d.receiving.Store(true)
	if c.cfg.Mode == ModeWebhook {
		err = c.serveWebhook(ctx, d)
	} else {
		c.deleteWebhook(ctx)
		err = c.poll(ctx, d)
	}
	d.receiving.Store(false)
	c.health.Down("stopped")
	// Updates finished since the last save are saved now, not replayed after a restart.
	if ferr := in.flush(context.WithoutCancel(ctx)); ferr != nil {
		c.log.Error("saving the update inbox", "err", ferr)
	}
	return err
}

// Ready is nil while the bot receives updates and storing them works; otherwise an error
// naming the problem.
func (c *Channel) Ready() error { return c.health.Err() }

// setCommands publishes the /plan menu. A failure only costs the menu, so it is logged.
func (c *Channel) setCommands(ctx context.Context) {
	var cmds []models.BotCommand
	for _, e := range commands.MenuEntries() {
		cmds = append(cmds, models.BotCommand{Command: e.Command, Description: e.Description})
	}
	err := c.do(ctx, 0, false, "setMyCommands", func(ctx context.Context) error {
		_, err := c.b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
		return err
	})
	if err != nil && ctx.Err() == nil {
		c.log.Warn("setting the command menu", "err", err)
	}
}

// address is the conversation of a message: forum topics are separate sessions; the
// message_thread_id of an ordinary group (a reply thread) is not.
func (c *Channel) address(m *models.Message) core.Address {
	a := core.Address{Channel: Name, Account: c.account, Chat: strconv.FormatInt(m.Chat.ID, 10)}
	if m.Chat.IsForum && m.IsTopicMessage && m.MessageThreadID != 0 {
		a.Thread = strconv.Itoa(m.MessageThreadID)
	}
	return a
}

// target reads the chat and topic of an address this channel made.
func target(a core.Address) (chat int64, thread int, err error) {
	if a.Channel != Name {
		return 0, 0, fmt.Errorf("address of channel %q is not telegram's", a.Channel)
	}
	chat, err = strconv.ParseInt(a.Chat, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("chat %q is not a telegram chat id", a.Chat)
	}
	if a.Thread != "" {
		if thread, err = strconv.Atoi(a.Thread); err != nil {
			return 0, 0, fmt.Errorf("thread %q is not a telegram topic id", a.Thread)
		}
	}
	return chat, thread, nil
}
