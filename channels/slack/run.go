package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Run connects over Socket Mode and hands events to h until ctx ends (returning nil). It
// returns an error only when Slack refuses the app for good (a bad or revoked app token).
//
// The loop that reads the library's events stores each envelope worth handling in the
// durable inbox, then acknowledges and queues it; a second goroutine turns the queue, in
// order, into messages. So an acknowledged envelope survives a crash, while an ack never
// waits for the engine, a users.info lookup or another envelope. Messages are queued with
// a context that outlives Run, so a shutdown lets turns in flight finish (Drain waits).
func (c *Channel) Run(ctx context.Context, h channels.Handler) error {
	if c.cfg.Mode == ModeHTTP {
		return c.runHTTP(ctx, h)
	}
	smc := socketmode.New(c.api,
		socketmode.OptionLog(libLog{c}),
		socketmode.OptionPingInterval(c.tune.pingInterval),
	)
	d, stop := c.start(ctx, h)
	runDone := make(chan error, 1)
	go func() { runDone <- smc.RunContext(ctx) }()
	var runErr error
loop:
	for {
		select {
		case evt := <-smc.Events:
			d.receive(ctx, smc, gather(evt, smc.Events))
		case runErr = <-runDone:
			break loop
		}
	}
	stop()
	if runErr == nil || ctx.Err() != nil && errors.Is(runErr, context.Canceled) {
		return nil
	}
	return fmt.Errorf("receiving slack events: %w", explainAuth(c.scrub(runErr), "channels.slack.app_token (an xapp- token with connections:write)"))
}

// start makes the dispatcher of one Run, replays the inbox and starts the worker. stop
// ends both: what was acknowledged is handled even on the way out, and the inbox is saved.
func (c *Channel) start(ctx context.Context, h channels.Handler) (d *dispatcher, stop func()) {
	d = &dispatcher{c: c, h: h, q: newQueue(), in: channels.OpenInbox(ctx, c.st, Name, c.team, c.log), ctx: ctx}
	c.disp.Store(d)
	d.replay()
	var wg sync.WaitGroup
	wg.Go(func() { d.work(ctx) })
	d.receiving.Store(true)
	return d, func() {
		d.receiving.Store(false)
		c.health.Down("stopped")
		d.q.close()
		wg.Wait()
		if err := d.in.Flush(context.WithoutCancel(ctx)); err != nil {
			c.log.Error("saving the slack inbox", "err", err)
		}
	}
}

// maxBatch bounds how many envelopes one inbox save covers.
const maxBatch = 64

// gather returns evt and whatever else the library has ready, so that envelopes that
// arrive together are stored with one commit.
func gather(evt socketmode.Event, more <-chan socketmode.Event) []socketmode.Event {
	batch := []socketmode.Event{evt}
	for len(batch) < maxBatch {
		select {
		case e := <-more:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// receive takes events from the library: envelopes are stored, acknowledged and queued;
// the library's own news (connecting, errors) is logged.
func (d *dispatcher) receive(ctx context.Context, smc *socketmode.Client, evts []socketmode.Event) {
	var envelopes []socketmode.Event
	for _, evt := range evts {
		switch evt.Type {
		case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive:
			if evt.Request != nil {
				envelopes = append(envelopes, evt)
			}
		default:
			d.news(ctx, smc, evt)
		}
	}
	if len(envelopes) > 0 {
		_ = d.accept(ctx, envelopes, func(i int, payload any) {
			d.ack(ctx, smc, envelopes[i].Request.EnvelopeID, payload)
		})
	}
}

// news handles what the library reports besides envelopes.
func (d *dispatcher) news(ctx context.Context, smc *socketmode.Client, evt socketmode.Event) {
	c := d.c
	switch evt.Type {
	case socketmode.EventTypeErrorBadMessage:
		// The library could not read the envelope, so it will not ack it; an unacknowledged
		// envelope comes back, unreadable again, so it is acknowledged here and dropped.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		if bad == nil {
			return
		}
		var head struct {
			EnvelopeID string `json:"envelope_id"`
			Type       string `json:"type"`
		}
		_ = json.Unmarshal(bad.Message, &head)
		c.log.Warn("skipping a slack envelope that could not be read", "type", head.Type, "envelope", head.EnvelopeID, "err", c.scrub(bad.Cause))
		if head.EnvelopeID != "" {
			if err := smc.AckCtx(ctx, head.EnvelopeID, nil); err != nil && ctx.Err() == nil {
				c.log.Error("acknowledging a slack envelope", "envelope", head.EnvelopeID, "err", c.scrub(err))
			}
		}
	case socketmode.EventTypeConnecting:
		c.log.Debug("connecting to slack")
	case socketmode.EventTypeConnected:
		c.health.Up()
		c.log.Info("connected to slack")
	case socketmode.EventTypeHello:
		c.log.Debug("slack said hello")
	case socketmode.EventTypeConnectionError:
		if e, ok := evt.Data.(*slackgo.ConnectionErrorEvent); ok && ctx.Err() == nil {
			c.health.Down("connecting to slack fails")
			c.log.Warn("connecting to slack failed; retrying", "attempt", e.Attempt, "retry_in", e.Backoff, "err", c.scrub(e.ErrorObj))
		}
	case socketmode.EventTypeInvalidAuth:
		c.health.Down("slack refused the app token")
		c.log.Error("slack refused the app token; check channels.slack.app_token")
	case socketmode.EventTypeIncomingError:
		if e, ok := evt.Data.(*slackgo.IncomingEventError); ok && ctx.Err() == nil {
			c.log.Warn("reading from slack", "err", c.scrub(e.ErrorObj))
		}
	case socketmode.EventTypeErrorWriteFailed:
		if e, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok && ctx.Err() == nil {
			env := ""
			if e.Response != nil {
				env = e.Response.EnvelopeID
			}
			c.log.Error("an acknowledgement to slack was not sent; slack will deliver the event again", "envelope", env, "err", c.scrub(e.Cause))
		}
	}
}

// viewAnswer is the acknowledgement of a modal submission: empty (the modal closes) unless
// the feedback is blank, when the modal stays open and says what is missing.
func viewAnswer(cb slackgo.InteractionCallback) any {
	if cb.View.CallbackID != reviseCallback || feedbackOf(cb) != "" {
		return nil
	}
	return slackgo.NewErrorsViewSubmissionResponse(map[string]string{feedbackBlock: "Say what should change."})
}

// item is one acknowledged envelope waiting to be handled.
type item struct {
	kind socketmode.EventType
	data any
	req  *socketmode.Request
	key  string // its inbox entry; "" for one that was not stored
}

// queue is the unbounded, ordered hand-over between receiving and handling: receiving
// must never wait, whatever handling is doing.
type queue struct {
	mu     sync.Mutex
	items  []item
	closed bool
	signal chan struct{}
}

func newQueue() *queue { return &queue{signal: make(chan struct{}, 1)} }

func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.wake()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *queue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop returns the next item, waiting for one; ok is false once the queue is closed and
// empty.
func (q *queue) pop() (item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = item{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return item{}, false
		}
		<-q.signal
	}
}

// dispatcher turns queued envelopes into work, in the order they arrived.
type dispatcher struct {
	c  *Channel
	h  channels.Handler
	q  *queue
	in *channels.Inbox

	ctx       context.Context // Run's, in mode http: what the routes accept with
	accepting atomic.Bool     // mode http: Run is taking requests
	receiving atomic.Bool     // the worker takes queued envelopes (AdoptInbox may add to them)

	inflight sync.WaitGroup // messages handed over and not yet settled
	left     atomic.Int64   // messages the handler gave up on while stopping
}

func (d *dispatcher) work(ctx context.Context) {
	for {
		it, ok := d.q.pop()
		if !ok {
			return
		}
		// The envelope was acknowledged: its work outlives Run.
		wctx := context.WithoutCancel(ctx)
		j, ok := d.c.inbound(wctx, it)
		switch {
		case !ok:
			d.done(ctx, it.key)
		case j.msg != nil:
			if j.local != nil {
				go j.local(wctx)
			}
			d.deliver(ctx, it.key, *j.msg, j.after)
		case j.local != nil:
			d.inflight.Go(func() {
				j.local(wctx)
				d.done(ctx, it.key)
			})
		default:
			d.done(ctx, it.key)
		}
	}
}

// deliver hands a message to the handler; after, if set, runs once it is queued.
func (d *dispatcher) deliver(ctx context.Context, key string, m core.Message, after func(ctx context.Context)) {
	m.Replays = true // the inbox keeps the event until it is settled
	// Settled by the engine's goroutine, right after the turn.
	d.inflight.Add(1)
	d.h.EnqueueThen(context.WithoutCancel(ctx), m, func(err error) {
		defer d.inflight.Done()
		if ctx.Err() != nil {
			// Run has ended: the settle saves the inbox durably at once (done), which
			// must not hold the engine's worker (then must not block). Drain waits.
			d.inflight.Go(func() { d.settle(ctx, key, m, err) })
			return
		}
		d.settle(ctx, key, m, err)
	})
	if after != nil {
		go after(context.WithoutCancel(ctx))
	}
}

// handled logs a handler failure and stops matching replies to the message.
func (c *Channel) handled(m core.Message, err error) {
	if err != nil {
		c.log.Error("handling slack event", "event", m.ID, "slack_channel", m.Address.Chat, "err", err)
	}
	c.waiting.forget(m.ID)
}

// job is what an envelope asks for: a message for the handler, and work the adapter does
// itself (local, concurrently; after, once the message is queued).
type job struct {
	msg   *core.Message
	local func(ctx context.Context)
	after func(ctx context.Context)
}
