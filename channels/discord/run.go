package discord

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// Run opens the gateway, registers /plan, and hands events to h until ctx ends (returning
// nil); with interactions http it also takes interaction requests (RunInteractions and
// RunGateway in one). A lost connection is reopened with a growing pause, resuming the
// session so Discord replays what was missed; Run returns an error only when Discord
// refuses the bot for good (a bad token, intents that are not enabled).
//
// Messages are queued with the handler (the engine) in gateway order; the queued work
// outlives Run, so a shutdown lets in-flight turns finish (the caller bounds that).
func (c *Channel) Run(ctx context.Context, h channels.Handler) error {
	d, release := c.accept(ctx, h)
	defer release()
	return c.runGateway(ctx, d)
}

// RunInteractions takes requests on the interactions endpoint (interactions http) until
// ctx ends, without the gateway, which nothing on that path needs (the follow-ups go
// through the webhook API with the interaction's token). So with several replicas it runs
// on every one of them, and RunGateway only on the replica elected for it.
func (c *Channel) RunInteractions(ctx context.Context, h channels.Handler) error {
	_, release := c.accept(ctx, h)
	defer release()
	<-ctx.Done()
	return nil
}

// RunGateway is Run without the interactions endpoint: the gateway's messages (and, with
// interactions gateway, its interactions) until ctx ends.
func (c *Channel) RunGateway(ctx context.Context, h channels.Handler) error {
	d := newDispatcher(c, h, ctx)
	if !c.HTTPInteractions() { // the gateway brings the interactions: their inbox is here
		defer c.receiveInteractions(ctx, d)()
	}
	return c.runGateway(ctx, d)
}

// accept makes a dispatcher the one of the interactions route, with the inbox open and
// replayed, until release: release stops the route taking requests and saves the inbox.
func (c *Channel) accept(ctx context.Context, h channels.Handler) (*dispatcher, func()) {
	d := newDispatcher(c, h, ctx)
	stopInbox := c.receiveInteractions(ctx, d)
	d.accepting.Store(true)
	c.disp.Store(d)
	if c.HTTPInteractions() {
		c.log.Info("taking discord interactions over http", "path", InteractionsPath)
	}
	return d, func() {
		d.accepting.Store(false)
		stopInbox()
	}
}

// runGateway connects to the gateway and hands its events to d until ctx ends.
func (c *Channel) runGateway(ctx context.Context, d *dispatcher) error {
	defer c.health.Down("stopped")
	lost := make(chan struct{}, 1)
	removers := []func(){
		c.s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { c.onMessage(ctx, d, m.Message) }),
		c.s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { c.onInteraction(ctx, d, i.Interaction) }),
		c.s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) { c.onReady(r) }),
		c.s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) {
			c.health.Up()
			c.log.Info("gateway session resumed")
		}),
		c.s.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) {
			c.health.Down("gateway connection lost")
			select {
			case lost <- struct{}{}:
			default:
			}
		}),
		c.s.AddHandler(func(_ *discordgo.Session, rl *discordgo.RateLimit) {
			// The URL is left out: a webhook URL holds an interaction token.
			c.log.Info("rate limited by discord; the request waits", "retry_after", rl.RetryAfter)
		}),
	}
	defer func() {
		for _, remove := range removers {
			remove()
		}
	}()

	if err := c.open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("running discord: %w", err)
	}
	c.registerCommands(ctx)
	for {
		select {
		case <-ctx.Done():
			c.close()
			return nil
		case <-lost:
			if ctx.Err() != nil {
				continue
			}
			c.log.Warn("gateway connection lost; reconnecting")
			if err := c.open(ctx); err != nil {
				c.close()
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("running discord: %w", err)
			}
		}
	}
}

// open connects to the gateway (resuming the session after the first time), waiting
// longer after each failure, until it succeeds, ctx ends, or Discord refuses the bot.
func (c *Channel) open(ctx context.Context) error {
	wait := backoff.New(c.tune.reconnectMin, c.tune.reconnectMax)
	for {
		err := c.s.Open()
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			return nil
		}
		if fatal := refusal(err); fatal != nil {
			c.log.Error("discord refused the gateway connection", "err", fatal)
			return fatal
		}
		pause := wait.NextBackOff()
		c.log.Warn("connecting to the discord gateway failed", "err", c.scrub(err), "retry_in", pause)
		if channels.Sleep(ctx, pause) != nil {
			return ctx.Err()
		}
	}
}

// refusal explains the gateway close codes that no reconnect can fix; nil for the rest.
func refusal(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case 4004:
		return errors.New("discord rejected the bot token (4004); check channels.discord.token")
	case 4013, 4014:
		return fmt.Errorf("discord refused the gateway intents (%d): enable the Message Content intent under Bot → Privileged Gateway Intents in the Developer Portal", ce.Code)
	case 4010, 4011, 4012:
		return fmt.Errorf("discord refused the gateway connection (%d)", ce.Code)
	}
	return nil
}

// close ends the gateway connection. (The library waits a second for Discord to confirm.)
func (c *Channel) close() {
	if err := c.s.Close(); err != nil {
		c.log.Debug("closing the gateway", "err", c.scrub(err))
	}
}

func (c *Channel) onReady(r *discordgo.Ready) {
	if r.User != nil && r.User.ID != c.botID {
		c.log.Warn("the gateway names another bot than the token did", "gateway_bot", r.User.ID)
	}
	c.mu.Lock()
	if c.appID == "" && r.Application != nil && r.Application.ID != "" {
		c.appID = r.Application.ID
	}
	c.mu.Unlock()
	c.health.Up()
	c.log.Info("connected to the discord gateway", "guilds", len(r.Guilds))
}

// onMessage runs on the gateway goroutine: it decides and queues, nothing slow.
func (c *Channel) onMessage(ctx context.Context, d *dispatcher, m *discordgo.Message) {
	start := time.Now()
	handled := false
	if m != nil && c.seen.add(m.ID) {
		var msg core.Message
		if msg, handled = c.fromMessage(ctx, m); handled {
			d.fetches.deliver(d, work{msg: msg}, c.editPrepare(d.ctx, m, msg))
		}
	} else if m != nil {
		c.log.Debug("message delivered twice; handled once", "message", m.ID)
	}
	if c.gateHook != nil {
		c.gateHook(time.Since(start), handled)
	}
}

// onInteraction runs on the gateway goroutine: the callback is answered from another one.
func (c *Channel) onInteraction(ctx context.Context, d *dispatcher, i *discordgo.Interaction) {
	start := time.Now()
	defer func() {
		if c.gateHook != nil {
			c.gateHook(time.Since(start), true)
		}
	}()
	if i == nil {
		return
	}
	resp, p := c.takeInteraction(ctx, d, i, nil)
	switch {
	case resp == nil:
	case p == nil:
		go func() { _ = c.respond(d.ctx, i, resp, start) }() // an answer the adapter settles itself; respond logs
	default:
		go c.acknowledge(d.ctx, p, resp, start)
	}
}

// takeInteraction is the one inbound path of interactions, over the gateway or HTTP: it
// decides what i asks for and queues its message, if any, before anyone answers. It
// returns the callback to answer with (nil: none) and, for one the engine handles, the
// pending interaction the answer acknowledges, which the caller must settle.
func (c *Channel) takeInteraction(ctx context.Context, d *dispatcher, i *discordgo.Interaction, raw []byte) (*discordgo.InteractionResponse, *pendingIx) {
	if !c.seen.add(i.ID) {
		c.log.Debug("interaction delivered twice; answered once", "interaction", i.ID)
		return nil, nil
	}
	j, ok := c.fromInteraction(ctx, i)
	if !ok {
		return nil, nil
	}
	if j.local != nil {
		return j.local, nil
	}
	// Saved before anyone answers (inbox.go): Discord will not deliver it again. One that
	// cannot be saved is refused; the person is told nothing changed.
	if err := c.admit(ctx, i, raw, j.kind); err != nil || !c.inbox().take(i.ID) {
		return ephemeral(replyNotStored), nil
	}
	// Queued first, so the engine has the message by the time Discord sees the answer.
	p := c.register(i, j.kind)
	j.msg.Replays = true // the inbox keeps it until it is settled
	d.deliver(work{msg: j.msg, ix: p, key: i.ID})
	return j.ack, p
}

// work is one message for the handler, with the interaction it came from, if any.
type work struct {
	msg core.Message
	ix  *pendingIx
	key string // its inbox entry (an interaction), "" for a message
}

// dispatcher hands messages to the handler in gateway order.
type dispatcher struct {
	c   *Channel
	h   channels.Handler
	ctx context.Context // outlives Run: queued work is finished, not abandoned
	run context.Context // Run's own: once it ends, a stopped handler's work is kept

	accepting atomic.Bool // Run or RunInteractions is running: the interactions route may queue
	fetches   fetchChain  // messages wait for an edited plan file's download before them
}

func newDispatcher(c *Channel, h channels.Handler, run context.Context) *dispatcher {
	return &dispatcher{c: c, h: h, ctx: context.WithoutCancel(run), run: run}
}

// deliver queues w's message with the handler, in gateway order.
func (d *dispatcher) deliver(w work) {
	d.h.EnqueueThen(d.ctx, w.msg, func(err error) {
		if w.ix != nil {
			// An interaction's settling may wait for its placeholder's acknowledgement and
			// delete it (Channel.finish): that must not hold the engine's goroutine.
			go d.handled(w, err)
			return
		}
		d.handled(w, err)
	})
}

// handled logs a handler failure, retires the interaction the message came from from the
// inbox and settles its answer.
func (d *dispatcher) handled(w work, err error) {
	c := d.c
	if err != nil {
		c.log.Error("handling discord event", "event", w.msg.ID, "chat", w.msg.Address.Chat, "err", err)
	}
	kept := w.key != "" && !d.settle(w, err)
	if w.ix != nil {
		c.finish(d.ctx, w.ix, kept)
	}
}
