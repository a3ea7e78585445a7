package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// elect wraps the channels whose receiving must run on one replica of those sharing the
// database: Telegram polling (getUpdates has one consumer; a second poller steals updates
// and gets 409) and the Discord gateway (every connection receives every message). Each
// wrapped channel receives only while its replica holds the channel's election lease
// (store.Elector). Webhooks, Discord's HTTP interactions (splitReceiver), Slack (Socket
// Mode spreads envelopes over connections, the Events API is plain HTTP) and the web
// channel run on every replica; so does sending: replies go through the channels
// themselves, whichever replica leads.
func elect(chans []channels.Channel, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger) []channels.Channel {
	out := make([]channels.Channel, 0, len(chans))
	for _, ch := range chans {
		name, what := electionFor(ch, cfg)
		if name == "" {
			out = append(out, ch)
			continue
		}
		el := &store.Elector{Name: name, Owner: engine.ProcessOwner(), St: st, Now: now, Gone: engine.OwnerGone, Log: log}
		e := &electedChannel{Channel: ch, el: el, what: what, log: log}
		if sr, ok := ch.(splitReceiver); ok && sr.HTTPInteractions() {
			e.split = sr
		}
		out = append(out, e)
	}
	return out
}

// electionFor names the lease a channel's receiving needs, "" for none.
func electionFor(ch channels.Channel, cfg *Config) (lease, what string) {
	for _, r := range channelTable {
		if r.name == ch.Name() && r.election != nil {
			return r.election(ch, cfg)
		}
	}
	return "", ""
}

// splitReceiver is a channel whose receiving is only partly elected: the Discord
// gateway runs on the leader, while interaction requests on the HTTP endpoint are verified
// and handled wherever the load balancer sends them (discord.Channel).
type splitReceiver interface {
	HTTPInteractions() bool
	RunInteractions(ctx context.Context, h channels.Handler) error
	RunGateway(ctx context.Context, h channels.Handler) error
	InteractionsReady() error
}

// electedChannel runs its channel's Run only while this replica leads the election, and
// stops it when the lease is lost (another replica took it after this one could not renew).
// A split channel runs its shared part (RunInteractions) all along, on every replica, and
// only its gateway while leading.
type electedChannel struct {
	channels.Channel
	el    *store.Elector
	what  string
	log   *slog.Logger
	split splitReceiver // nil: the whole Run is elected
}

// Run campaigns until ctx ends; the lease is released after the channel has stopped, so
// another replica takes over at once after a clean shutdown.
func (c *electedChannel) Run(ctx context.Context, h channels.Handler) error {
	ectx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.el.Run(ectx); close(done) }()
	defer func() { stop(); <-done }()
	run := c.Channel.Run
	if c.split != nil {
		run = c.split.RunGateway
		shared := make(chan struct{})
		go func() { _ = c.split.RunInteractions(ectx, h); close(shared) }() // returns nil when ectx ends
		defer func() { stop(); <-shared }()
	}
	for {
		lctx, cancel, err := c.el.Lead(ctx)
		if err != nil {
			return nil // ctx ended while standing by
		}
		c.log.Info("elected: running "+c.what, "lease", c.el.Name)
		err = run(lctx, h)
		lost := lctx.Err() != nil && ctx.Err() == nil
		cancel()
		if !lost {
			return err
		}
		c.log.Warn("lost the election lease: standing by for "+c.what, "lease", c.el.Name, "holder", c.el.Holder().Owner)
	}
}

// Ready is the channel's own readiness while leading; a standby replica is ready (it
// serves everything else) and says whom it stands by for, once a split channel's shared
// part takes requests.
func (c *electedChannel) Ready() error {
	if c.el.Leading() {
		if r, ok := c.Channel.(readier); ok {
			return r.Ready()
		}
		return nil
	}
	h := c.el.Holder()
	if h.Owner == "" {
		// No campaign has told who leads yet (just started): not ready, not standby.
		return fmt.Errorf("campaigning for %s", c.what)
	}
	if c.split != nil {
		if err := c.split.InteractionsReady(); err != nil {
			return err
		}
	}
	return httpserver.ReadyNote(fmt.Sprintf("standby for %s (held by %s)", c.what, h.Owner))
}

// unelected is the channel an election wraps, for the route registration in track.
func unelected(ch channels.Channel) channels.Channel {
	if e, ok := ch.(*electedChannel); ok {
		return e.Channel
	}
	return ch
}
