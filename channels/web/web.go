// Package web is the browser channel of docs/design.md §11: a chat page where a person
// signed in with a token talks to the agent and decides on plans, and a dashboard of every
// session on every channel that waits for a decision or an answer. It implements
// channels.Channel like any platform and serves its pages on the shared httpserver.Server.
//
// Pages are html/template, rendered on the server; one small embedded script posts the
// buttons and applies the live updates that arrive over Server-Sent Events, from an
// in-memory event log per conversation (convo.go) that a reconnecting stream resumes
// with Last-Event-ID.
package web

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/conf"
	"github.com/plangate/plangate/core/machine"
)

// Name is the channel name in core.Address.Channel.
const Name = "web"

// EditHint is how a person sends an edited plan file back here (engine.Config.EditHints).
const EditHint = "use Edit on the plan's card"

// DefaultSessionTTL is how long a sign-in lasts when channels.web.session_ttl is not set.
const DefaultSessionTTL = 7 * 24 * time.Hour

// The per-user caps when channels.web leaves them unset (see Config).
const (
	DefaultMaxConversations = 100
	DefaultMaxStreams       = 10
	DefaultMaxMessageBytes  = 32 << 10
)

// Config is the channels.web section of the configuration.
type Config struct {
	Enabled bool `yaml:"enabled"`
	// Users maps a user name to the token that user signs in with. The sender id of the
	// user is web:<name>, which is how access.approvers names them.
	Users map[string]string `yaml:"users"`
	// SessionTTL is how long a sign-in lasts; 0 = DefaultSessionTTL.
	SessionTTL time.Duration `yaml:"session_ttl"`
	// Secure marks the cookies Secure; set it when the server is reached over HTTPS
	// (an https Deps.PublicURL sets it too).
	Secure bool `yaml:"secure_cookie"`
	// MaxConversations caps the conversations of one user; 0 = DefaultMaxConversations.
	MaxConversations int `yaml:"max_conversations"`
	// MaxStreams caps the live pages one user holds open on one replica; 0 =
	// DefaultMaxStreams.
	MaxStreams int `yaml:"max_streams"`
	// MaxMessageBytes caps one message or button value; 0 = DefaultMaxMessageBytes.
	MaxMessageBytes int `yaml:"max_message_bytes"`
}

// Defaults is the section's configuration before the file is read: every default set.
func Defaults() Config {
	var c Config
	c.Defaults()
	return c
}

// Defaults fills in what the configuration left out.
func (c *Config) Defaults() {
	orDefault(&c.SessionTTL, DefaultSessionTTL)
	orDefault(&c.MaxConversations, DefaultMaxConversations)
	orDefault(&c.MaxStreams, DefaultMaxStreams)
	orDefault(&c.MaxMessageBytes, DefaultMaxMessageBytes)
}

// orDefault sets *v to def when it is not positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

var userName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// minTokenLen keeps tokens long enough that guessing them through the sign-in form,
// which answers a wrong token slowly, is hopeless.
const minTokenLen = 16

// Validate reports every problem of an enabled web channel's configuration as key errors
// (conf.KeyError), relative to the section. Tokens never appear in the message; an empty
// token is unset, so the loader names the variable it was read from.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	if len(c.Users) == 0 {
		return conf.Invalid("users", "has no users configured; add one, e.g. alice: ${PLANGATE_WEB_ALICE}")
	}
	var errs []error
	seen := map[string]string{}
	for _, name := range c.userNames() {
		tok, key := c.Users[name], "users."+name
		switch {
		case !userName.MatchString(name):
			errs = append(errs, conf.Invalid(key, "is not a user name: lower-case letters, digits, '.', '_' or '-' (at most 32)"))
			continue
		case name == core.LocalAccount:
			errs = append(errs, conf.Invalid(key, "is the terminal's account, so its sessions would share the terminal's plan directories; choose another name"))
			continue
		case tok == "":
			errs = append(errs, &conf.KeyError{Key: key, Msg: "has an empty token", Unset: true})
			continue
		case len(tok) < minTokenLen:
			errs = append(errs, conf.Invalid(key, "has a token shorter than %d characters", minTokenLen))
			continue
		}
		if other, dup := seen[tok]; dup {
			errs = append(errs, conf.Invalid(key, "has the same token as %s; every user needs their own", other))
			continue
		}
		seen[tok] = name
	}
	if c.SessionTTL < 0 {
		errs = append(errs, conf.Invalid("session_ttl", "must not be negative"))
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_conversations", c.MaxConversations}, {"max_streams", c.MaxStreams}, {"max_message_bytes", c.MaxMessageBytes}} {
		if n.v < 0 {
			errs = append(errs, conf.Invalid(n.key, "must not be negative (0 takes the default)"))
		}
	}
	return errors.Join(errs...)
}

// Describe summarises the section for `plangate config check`, without the tokens.
func (c *Config) Describe() string {
	if !c.Enabled {
		return "web: off"
	}
	d := *c
	d.Defaults()
	return fmt.Sprintf("web: %d %s (%s), sign-in lasts %s, pages / and /dashboard on the HTTP server; per user at most %d conversations, %d live pages, %d-byte messages",
		len(c.Users), plural(len(c.Users), "user", "users"), strings.Join(c.userNames(), ", "), d.SessionTTL,
		d.MaxConversations, d.MaxStreams, d.MaxMessageBytes)
}

func (c *Config) userNames() []string {
	return slices.Sorted(maps.Keys(c.Users))
}

// Store is what the pages read, and where sign-outs (auth.go) and the conversations users
// made (conversations.go) are kept, shared by every replica on the database and kept
// across restarts; *store.Store satisfies it.
type Store interface {
	Session(ctx context.Context, id string) (core.Session, error)
	Sessions(ctx context.Context) ([]core.Session, error)
	WaitingSessions(ctx context.Context) ([]core.Session, error)
	Plan(ctx context.Context, id string) (core.Plan, error)
	PlanByApproval(ctx context.Context, approvalID string) (core.Plan, error)
	Plans(ctx context.Context, sessionID string) ([]core.Plan, error)
	Transcript(ctx context.Context, sessionID string, limit int) ([]core.ChatMessage, error)
	Events(ctx context.Context, sessionID string) ([]core.Event, error)
	Nudges(ctx context.Context, sessionID string) ([]core.Nudge, error)
	SignOut(ctx context.Context, nonce string, until time.Time) error
	SignedOut(ctx context.Context, nonce string) (bool, error)
	PruneSignOuts(ctx context.Context, now time.Time) (int64, error)
	ChannelState(ctx context.Context, channel, account, key string) (string, bool, error)
	SetChannelState(ctx context.Context, channel, account, key, value string) error
}

// Deps are what the channel talks through. Store is required; the rest have defaults.
type Deps struct {
	Store Store
	// Approvers is access.approvers: who may decide from the dashboard, and whose chat
	// shows decision buttons. The engine enforces the rules either way.
	Approvers []string
	// Policies are access.policies: the dashboard and the cards count approvals as the
	// engine does.
	Policies []machine.Policy
	Log      *slog.Logger
	Now      func() time.Time // defaults to time.Now
	// WrongToken is waited after a wrong sign-in token; defaults to one second. Tests
	// inject one that does not sleep.
	WrongToken func(ctx context.Context)
	// Sent, when set, lists the replies every replica sent, so that open pages show
	// those another replica sent too (see stream.go); nil for a single process.
	Sent SentReplies
	// Reach is the engine's (engine.Config.Reach): cards and downloaded plan files say a
	// plan's grants with it.
	Reach machine.Reach
	// PublicURL is http.public_url: when it is https, the cookies are Secure whatever
	// secure_cookie says.
	PublicURL string
}

// Channel is the web channel. Its methods may be called from any goroutine.
type Channel struct {
	cfg   Config
	d     Deps
	log   *slog.Logger
	keys  map[string][]byte // per-user key for cookies and CSRF tokens, from the token
	epoch string            // distinguishes event ids of this process from a previous one
	pages *template.Template
	// startWait is how long a post waits for Run to start (at start-up, a page may post
	// before the Hub has started the channel).
	startWait time.Duration
	refresh   time.Duration // how often an open dashboard refreshes its list
	keepAlive time.Duration // how often an idle stream sends a comment (keepAlive)

	mu      sync.Mutex
	run     *running
	runWait chan struct{} // closed and replaced when run changes
	convos  map[string]*convo
	byMsgID map[string]msgRef // Send ids -> where the message is, for Edit
	mirror  *mirror           // nil without Deps.Sent

	streams map[string]int // open live pages per user
	making  sync.Mutex     // New conversation, one at a time
	titling sync.Mutex     // the read-modify-write of a user's titles record

	ids atomic.Uint64
}

// running is the state of one Run call.
type running struct {
	ctx context.Context
	h   channels.Handler
}

type msgRef struct {
	session string
	item    *item
}

var (
	_ channels.Channel = (*Channel)(nil)
	_ channels.Editor  = (*Channel)(nil)
)

// New returns the web channel; it does no I/O. Its routes go on the HTTP server with
// RegisterHTTP, and it runs in the Hub like any channel.
func New(cfg Config, d Deps) (*Channel, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil && cfg.Enabled {
		return nil, fmt.Errorf("starting web: %w", err)
	}
	if d.Store == nil {
		return nil, errors.New("starting web: no store")
	}
	if u := strings.ToLower(d.PublicURL); strings.HasPrefix(u, "https://") {
		cfg.Secure = true
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.WrongToken == nil {
		d.WrongToken = func(ctx context.Context) {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
	}
	p, err := parsePages()
	if err != nil {
		return nil, fmt.Errorf("starting web: %w", err)
	}
	c := &Channel{
		cfg: cfg, d: d, log: d.Log.With("channel", Name), keys: map[string][]byte{}, pages: p,
		runWait: make(chan struct{}), convos: map[string]*convo{}, byMsgID: map[string]msgRef{},
		streams: map[string]int{},
		epoch:   randomID(4), startWait: 2 * time.Second, refresh: 10 * time.Second, keepAlive: keepAlive,
	}
	for name, tok := range cfg.Users {
		c.keys[name] = userKey(tok)
	}
	if d.Sent != nil {
		c.mirror = newMirror(d.Sent, d.Now)
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// Run makes h the receiver of what people type and click in the browser until ctx ends,
// and returns nil; the HTTP server serves the pages.
func (c *Channel) Run(ctx context.Context, h channels.Handler) error {
	c.setRunning(&running{ctx: ctx, h: h})
	if c.mirror != nil {
		go c.follow(ctx)
	}
	<-ctx.Done()
	c.setRunning(nil)
	return nil
}

func (c *Channel) setRunning(r *running) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run = r
	close(c.runWait)
	c.runWait = make(chan struct{})
}

// errNotRunning is shown when a page posts while the channel is not running.
var errNotRunning = errors.New("the web channel is not running")

// deliver hands m to the engine without waiting for the turn it starts: messages of one
// conversation reach the handler in the order they were posted, and the HTTP request
// returns at once. It waits a little for Run to start, as a page may post first.
func (c *Channel) deliver(ctx context.Context, m core.Message) error {
	var r *running
	for {
		c.mu.Lock()
		run, wait := c.run, c.runWait
		c.mu.Unlock()
		if run != nil {
			r = run
			break
		}
		select {
		case <-wait:
			continue
		case <-ctx.Done():
			return errNotRunning
		case <-time.After(c.startWait):
			return errNotRunning
		}
	}
	logFailure := func(err error) {
		if err != nil && r.ctx.Err() == nil {
			c.log.Warn("handling message", "session", m.Address.SessionID(), "err", err)
		}
	}
	r.h.EnqueueThen(r.ctx, m, logFailure)
	return nil
}

// decider reports whether web user name is an approver anywhere (a policy's list or
// access.approvers), for the dashboard's note on why it shows no buttons; the sessions
// themselves are checked with mayDecide.
func (c *Channel) decider(name string) bool {
	for _, p := range c.d.Policies {
		if slices.Contains(p.Approvers, Name+":"+name) {
			return true
		}
	}
	return slices.Contains(c.d.Approvers, Name+":"+name)
}

// mayDecide reports whether web user name may decide on plans in session s, by the
// engine's own rule (machine.MayDecide). direct is true for the user's own conversation on
// its page, where a message of theirs is direct; the dashboard's decisions are not.
func (c *Channel) mayDecide(name string, s core.Session, direct bool) bool {
	m := core.Message{Address: s.Address, Sender: person(name, s.Address.Channel), Direct: direct}
	return machine.MayDecide(c.d.Policies, c.d.Approvers, s, m)
}

// sees reports whether web user name may see session s at all (its page, plan files and
// dashboard row): it is their own conversation, or they may decide on it.
func (c *Channel) sees(name string, s core.Session) bool {
	return c.own(name, s.Address) || c.mayDecide(name, s, false)
}

// own reports whether a is a conversation of web user name.
func (c *Channel) own(name string, a core.Address) bool {
	return a.Channel == Name && a.Account == name
}

// person is the signed-in user as the sender of a message to a session of channel ch.
// In its own channel the id is the bare name, so the engine's "web:<id>" key names them;
// on another channel's session the id is "web:<name>", so it cannot pass for a user of
// that platform, and the role entry "web:<name>" is what access.approvers matches.
func person(name, ch string) core.Person {
	p := core.Person{ID: name, Name: name, Roles: []string{Name + ":" + name}}
	if ch != Name {
		p.ID = Name + ":" + name
	}
	return p
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
