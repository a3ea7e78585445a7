package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/channels/slack"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/channels/terminal"
	"github.com/plangate/plangate/channels/web"
	"github.com/plangate/plangate/core/backoff"
	"github.com/plangate/plangate/store"
)

// The chat channels, in one place: a channel is its package, its section in
// ChannelsConfig with its defaults (defaultChannels), and its row in channelTable. Every
// other file of the command loops over the table (docs/architecture.md, "Adding a channel").

// ChannelsConfig holds one section per chat platform. Each adapter package owns its
// section's type: its keys, defaults, checks and summary.
type ChannelsConfig struct {
	Terminal terminal.Config `yaml:"terminal"`
	Telegram telegram.Config `yaml:"telegram"`
	Slack    slack.Config    `yaml:"slack"`
	Discord  discord.Config  `yaml:"discord"`
	Web      web.Config      `yaml:"web"` // pages on the HTTP server: needs http.listen
	// OutboxMaxAge bounds how long a reply is tried: one left unsent by a killed process, or
	// whose send failed, is delivered (at the next start, or by the retries while running)
	// only while it is at most this old; older ones are dropped, counted, listed by the
	// admin API, and their chat told once sending works again.
	OutboxMaxAge time.Duration `yaml:"outbox_max_age"`
}

// defaultChannels is the channels section before the file overrides it.
func defaultChannels() ChannelsConfig {
	return ChannelsConfig{
		Terminal: terminal.Defaults(),
		Telegram: telegram.Defaults(),
		Slack:    slack.Defaults(),
		Discord:  discord.Defaults(),
		Web:      web.Defaults(),
		// A day: a reply late after an outage still answers; after that the chat is told.
		OutboxMaxAge: 24 * time.Hour,
	}
}

// channelDeps is what a channel is opened with besides its own section.
type channelDeps struct {
	cfg   *Config
	st    *store.Store
	state channels.State // the channel's view of st (stateFor)
	now   func() time.Time
	log   *slog.Logger
}

// channelRow is one chat channel as the command wires it.
type channelRow struct {
	name     string
	editHint string // how a person sends an edited plan file back (engine.Config.EditHints)
	// section is the channel's config section: whether it is on, its summary.
	section func(*ChannelsConfig) channelSection
	// open connects the channel for serve; nil for the one `plangate chat` runs itself.
	open func(ctx context.Context, d channelDeps) (channels.Channel, error)
	// openToAll: anyone on the platform can write to the bot, so without access.approvers
	// the first person in a chat owns its session (openApprovalWarning); exampleUser is a
	// user id of the platform for that warning.
	openToAll   bool
	exampleUser string
	// userIDs: its access entries name a platform user id ("<name>:<id>"); the web
	// channel's name a signed-in user instead. roleKind is the kind of its role entries
	// ("<roleKind>:<id>"), "" if it has none.
	userIDs  bool
	roleKind string
	// afterPaths completes the section once the config's paths are resolved.
	afterPaths func(*Config)
	// problems are the section's checks against the rest of the config (the HTTP server it
	// receives through); nil when it has none.
	problems func(*Config) []problem
	// election names the lease its receiving needs on PostgreSQL, "" when every replica
	// receives (election.go).
	election func(ch channels.Channel, cfg *Config) (lease, what string)
	// replicaInbox is the inbox key it keeps per replica when every replica receives
	// (replica_state.go), "" for none.
	replicaInbox func(*ChannelsConfig) string
}

// channelSection is what the command needs of every section.
type channelSection interface {
	On() bool
	Describe() string
}

// section adapts an adapter's section to channelSection.
type section[C interface{ Describe() string }] struct {
	on  bool
	cfg C
}

func (s section[C]) On() bool         { return s.on }
func (s section[C]) Describe() string { return s.cfg.Describe() }

// channelTable is every chat channel, in the order the command lists and opens them.
var channelTable = []channelRow{
	{
		name: terminal.Name, editHint: terminal.EditHint, userIDs: true,
		section: func(ch *ChannelsConfig) channelSection {
			return section[terminal.Config]{ch.Terminal.Enabled, ch.Terminal}
		},
		afterPaths: func(c *Config) {
			if c.Channels.Terminal.AttachmentsDir == "" {
				c.Channels.Terminal.AttachmentsDir = c.Plans.Dir
			}
		},
	},
	{
		name: telegram.Name, editHint: telegram.EditHint, userIDs: true, openToAll: true, exampleUser: "123456789",
		section: func(ch *ChannelsConfig) channelSection {
			return section[telegram.Config]{ch.Telegram.Enabled, ch.Telegram}
		},
		open: func(ctx context.Context, d channelDeps) (channels.Channel, error) {
			cfg := d.cfg.Channels.Telegram
			cfg.PublicURL = d.cfg.HTTP.PublicURL // webhook mode registers it with Telegram
			tg, err := telegram.New(ctx, cfg, d.state, d.log)
			if err != nil {
				return nil, err
			}
			d.log.Info("telegram connected", "bot", tg.Username())
			return tg, nil
		},
		problems: func(c *Config) []problem {
			tg := c.Channels.Telegram
			if !tg.Enabled || tg.Mode != telegram.ModeWebhook {
				return nil
			}
			ps := needsListen(c, "channels.telegram.mode", tg.Mode)
			if c.HTTP.PublicURL == "" {
				ps = append(ps, problem{"channels.telegram.mode", "channels.telegram.mode is webhook but http.public_url is empty: set it to the HTTPS address Telegram reaches (ports 443, 80, 88 or 8443)"})
			}
			return ps
		},
		election: func(ch channels.Channel, cfg *Config) (string, string) {
			if tg, ok := ch.(*telegram.Channel); ok && cfg.Channels.Telegram.Mode != telegram.ModeWebhook {
				return "poller:telegram:" + tg.Username(), "telegram polling"
			}
			return "", ""
		},
		replicaInbox: func(ch *ChannelsConfig) string {
			if ch.Telegram.Mode == telegram.ModeWebhook {
				return "updates" // channels/telegram inbox.go
			}
			return ""
		},
	},
	{
		name: slack.Name, editHint: slack.EditHint, userIDs: true, openToAll: true, exampleUser: "U0123456789",
		section: func(ch *ChannelsConfig) channelSection { return section[slack.Config]{ch.Slack.Enabled, ch.Slack} },
		open: func(ctx context.Context, d channelDeps) (channels.Channel, error) {
			sl, err := slack.New(ctx, d.cfg.Channels.Slack, d.state, d.log)
			if err != nil {
				return nil, err
			}
			d.log.Info("slack connected", "team", sl.TeamID())
			return sl, nil
		},
		problems: func(c *Config) []problem {
			if sl := c.Channels.Slack; sl.Enabled && sl.Mode == slack.ModeHTTP {
				return needsListen(c, "channels.slack.mode", sl.Mode)
			}
			return nil
		},
		replicaInbox: func(*ChannelsConfig) string { return "inbox" }, // channels/inbox.go
	},
	{
		name: discord.Name, editHint: discord.EditHint, userIDs: true, openToAll: true, exampleUser: "123456789012345678",
		roleKind: "discord-role",
		section: func(ch *ChannelsConfig) channelSection {
			return section[discord.Config]{ch.Discord.Enabled, ch.Discord}
		},
		open: func(ctx context.Context, d channelDeps) (channels.Channel, error) {
			cfg := d.cfg.Channels.Discord
			cfg.Now = d.now // whether a saved interaction's token is still valid
			dc, err := discord.New(ctx, cfg, d.state, d.log)
			if err != nil {
				return nil, err
			}
			d.log.Info("discord connected", "bot", dc.BotID())
			return dc, nil
		},
		problems: func(c *Config) []problem {
			if dc := c.Channels.Discord; dc.Enabled && dc.Interactions == discord.InteractionsHTTP {
				return needsListen(c, "channels.discord.interactions", dc.Interactions)
			}
			return nil
		},
		election: func(ch channels.Channel, _ *Config) (string, string) {
			if dc, ok := ch.(*discord.Channel); ok {
				return "gateway:discord:" + dc.BotID(), "the discord gateway"
			}
			return "", ""
		},
		replicaInbox: func(ch *ChannelsConfig) string {
			if ch.Discord.Interactions == discord.InteractionsHTTP {
				return "inbox" // channels/discord/inbox.go: the interactions endpoint runs on every replica
			}
			return ""
		},
	},
	{
		name: web.Name, editHint: web.EditHint,
		section: func(ch *ChannelsConfig) channelSection { return section[*web.Config]{ch.Web.Enabled, &ch.Web} },
		open: func(_ context.Context, d channelDeps) (channels.Channel, error) {
			cfg := d.cfg
			deps := web.Deps{Store: d.st, Approvers: cfg.Access.Approvers, Policies: cfg.Access.CorePolicies(), Log: d.log,
				PublicURL: cfg.HTTP.PublicURL, Reach: cfg.Tools.reach()}
			if cfg.Store.postgres() {
				deps.Sent = d.st // other replicas' replies reach the pages open here
			}
			return web.New(cfg.Channels.Web, deps) // its pages are mounted on the HTTP server (track)
		},
		problems: func(c *Config) []problem {
			if c.Channels.Web.Enabled && c.HTTP.Listen == "" {
				return []problem{{"channels.web.enabled", "channels.web.enabled is true but http.listen is empty: the web channel's pages are served by the HTTP server; set http.listen, e.g. 127.0.0.1:8080"}}
			}
			return nil
		},
	},
}

// needsListen is the problem of a channel that receives over HTTP (key is value) while
// the HTTP server is off.
func needsListen(c *Config, key, value string) []problem {
	if c.HTTP.Listen != "" {
		return nil
	}
	return []problem{{key, fmt.Sprintf("%s is %s but http.listen is empty: the platform delivers to plangate's HTTP server; set http.listen (and http.public_url)", key, value)}}
}

// enabledRows are the rows whose section is on.
func enabledRows(ch *ChannelsConfig) []channelRow {
	var out []channelRow
	for _, r := range channelTable {
		if r.section(ch).On() {
			out = append(out, r)
		}
	}
	return out
}

// openChannels connects every enabled chat channel that serve runs, each with its own
// config section.
func openChannels(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger) ([]channels.Channel, error) {
	return openMissing(ctx, cfg, st, now, log, map[string]channels.Channel{})
}

// openMissing opens the enabled channels that opened does not hold yet, adding each to
// it, and returns them all in the table's order once every one is open; it stops at the
// first that fails.
func openMissing(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger, opened map[string]channels.Channel) ([]channels.Channel, error) {
	var chans []channels.Channel
	for _, r := range enabledRows(&cfg.Channels) {
		if r.open == nil {
			continue
		}
		c, ok := opened[r.name]
		if !ok {
			var err error
			if c, err = r.open(ctx, channelDeps{cfg: cfg, st: st, state: stateFor(cfg, st, r.name), now: now, log: log}); err != nil {
				return nil, err
			}
			opened[r.name] = c
		}
		chans = append(chans, c)
	}
	return chans, nil
}

// Waits between attempts to open the channels when a platform cannot be reached.
var (
	openRetryFirst = time.Second
	openRetryMax   = 30 * time.Second
)

// openChannelsPatiently is openChannels for serve: when a platform cannot be reached (no
// answer: a network error, a timeout), the channels not open yet are opened again after a
// wait that doubles from openRetryFirst to openRetryMax, until ctx ends, each failure
// logged and set on opening for /readyz; the ones that opened are kept as they are. An
// answer that refuses (a bad token) ends serve, since waiting does not fix it.
func openChannelsPatiently(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger, opening *openingCheck) ([]channels.Channel, error) {
	waits := backoff.New(openRetryFirst, openRetryMax)
	opened := map[string]channels.Channel{}
	for {
		chans, err := openMissing(ctx, cfg, st, now, log, opened)
		if err == nil || !unreachable(err) || ctx.Err() != nil {
			return chans, err
		}
		wait := waits.NextBackOff()
		why := fmt.Sprintf("trying again in %s: %v", wait, err)
		opening.set(why)
		log.Warn("a chat platform cannot be reached; serve stays up and tries again", "err", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// unreachable reports whether err is a platform that did not answer, not one that refused.
func unreachable(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// servesChannels is nil when serve has a channel to run, else the error that says how
// to enable one.
func servesChannels(cfg *Config) error {
	var served []string
	chatOnly := ""
	for _, r := range channelTable {
		switch {
		case r.open == nil:
			chatOnly = r.name
		case r.section(&cfg.Channels).On():
			return nil
		default:
			served = append(served, r.name)
		}
	}
	return fmt.Errorf("no chat channel is enabled: set channels.%s.enabled (or %s) in the config, or use plangate chat for the %s",
		served[0], strings.Join(served[1:], ", "), chatOnly)
}

// editHints is engine.Config.EditHints: each channel's.
func editHints() map[string]string {
	out := make(map[string]string, len(channelTable))
	for _, r := range channelTable {
		out[r.name] = r.editHint
	}
	return out
}

// channelNames lists the channels' names, in the table's order.
func channelNames(keep func(channelRow) bool) []string {
	var out []string
	for _, r := range channelTable {
		if keep == nil || keep(r) {
			out = append(out, r.name)
		}
	}
	return out
}
