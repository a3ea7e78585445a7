package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// ackStoreWait bounds how long storing an envelope may hold up its acknowledgement:
// Slack wants the ack within 3 seconds, and one that comes too late only makes it
// deliver the envelope again, which the inbox de-duplicates.
const ackStoreWait = 2 * time.Second

// replay queues the envelopes saved but not handled before a restart, oldest first.
func (d *dispatcher) replay() {
	pending := d.in.Pending()
	d.queue(pending, "a saved")
	if len(pending) > 0 {
		d.c.log.Info("replaying slack envelopes received before the restart", "count", len(pending))
	}
}

// queue queues the inbox entries es in order, dropping those that cannot be read; how
// says where they came from ("a saved", "an adopted").
func (d *dispatcher) queue(es []channels.InboxEntry, how string) {
	for _, e := range es {
		it, err := decodeEntry(e)
		if err != nil {
			d.c.log.Error("dropping "+how+" slack envelope that cannot be read", "key", e.Key, "err", err)
			d.in.Done(e.Key)
			continue
		}
		d.q.push(it)
	}
}

// InboxAccount implements channels.InboxAdopter: the team whose inbox this adapter keeps.
func (c *Channel) InboxAccount() string { return c.team }

// AdoptInbox implements channels.InboxAdopter: the adopted envelopes join this Run's
// queue after what waits there already.
func (c *Channel) AdoptInbox(ctx context.Context, saved string) (int, error) {
	d := c.disp.Load()
	if d == nil || !d.receiving.Load() {
		return 0, channels.ErrNotReceiving
	}
	es, err := d.in.AdoptReadable(ctx, saved, c.log)
	if err != nil {
		return 0, err
	}
	d.queue(es, "an adopted")
	return len(es), nil
}

// accept stores the envelopes worth handling (those that came together with one
// commit), then acknowledges and queues them in order. If they cannot be stored none is
// acknowledged, and the error says why: Slack delivers them again. One already waiting in
// the inbox (a redelivery, or a DM that came as both message.im and app_mention) is
// acknowledged and not queued twice. It is the one inbound path of both transports: ack
// answers envelope i over the Socket Mode websocket, or as the HTTP response.
func (d *dispatcher) accept(ctx context.Context, evts []socketmode.Event, ack func(i int, payload any)) error {
	c := d.c
	keys := make([]string, len(evts))
	var entries []channels.InboxEntry
	var stored []int // the evts index of each of entries
	for i, evt := range evts {
		key, keep := c.envelopeKey(evt)
		if keep {
			keys[i] = key
			stored = append(stored, i)
			entries = append(entries, channels.InboxEntry{Key: key, Kind: string(evt.Type), Ref: evt.Request.EnvelopeID, Data: evt.Request.Payload})
		}
	}
	fresh := make([]bool, len(evts))
	if len(entries) > 0 {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackStoreWait)
		added, err := d.in.AddAll(sctx, entries)
		cancel()
		if err != nil {
			c.health.Stored(err)
			c.logStoreFailed(len(entries), err)
			return err
		}
		if c.health.Stored(nil) {
			c.log.Info("storing slack events works again")
		}
		for j, i := range stored {
			fresh[i] = added[j]
		}
	}
	for i, evt := range evts {
		var payload any
		if cb, ok := evt.Data.(slackgo.InteractionCallback); ok && cb.Type == slackgo.InteractionTypeViewSubmission {
			payload = viewAnswer(cb) // a modal with no feedback stays open with a hint
		}
		dup := keys[i] != "" && !fresh[i]
		if dup {
			c.dropped.Note(channels.InboundDuplicate) // before the ack, which tests wait for
		}
		ack(i, payload)
		if dup {
			c.log.Debug("slack envelope waiting already; acknowledged again", "envelope", evt.Request.EnvelopeID, "key", keys[i])
			continue
		}
		d.q.push(item{kind: evt.Type, data: evt.Data, req: evt.Request, key: keys[i]})
	}
	return nil
}

// logStoreFailed says that envelopes could not be stored, once a minute at most: on a
// full disk every delivery fails, and Slack retries each.
func (c *Channel) logStoreFailed(n int, err error) {
	c.storeLogMu.Lock()
	now := time.Now()
	quiet := !c.storeLogAt.IsZero() && now.Sub(c.storeLogAt) < time.Minute
	if !quiet {
		c.storeLogAt = now
	}
	c.storeLogMu.Unlock()
	if !quiet {
		c.log.Error("storing slack envelopes failed; not acknowledging them, so slack delivers them again", "envelopes", n, "err", err)
	}
}

func (d *dispatcher) ack(ctx context.Context, smc *socketmode.Client, env string, payload any) {
	if err := smc.AckCtx(ctx, env, payload); err != nil && ctx.Err() == nil {
		d.c.log.Error("acknowledging a slack envelope", "envelope", env, "err", d.c.scrub(err))
	}
}

// envelopeKey names what an envelope brings, for de-duplication in the inbox: a message
// by its channel and ts (so both deliveries of one DM share a key), a command or click by
// its trigger id. keep is false for events the bot ignores, which are not stored.
func (c *Channel) envelopeKey(evt socketmode.Event) (key string, keep bool) {
	switch data := evt.Data.(type) {
	case slackevents.EventsAPIEvent:
		p, _, ok := c.eventMessage(data)
		if !ok {
			return "", false
		}
		return messageKey(p.ch, p.ts), true
	case slackgo.SlashCommand:
		if data.TriggerID != "" {
			return "slash:" + data.TriggerID, true
		}
	case slackgo.InteractionCallback:
		if data.TriggerID != "" {
			return "act:" + data.TriggerID, true
		}
	}
	if evt.Request.EnvelopeID == "" {
		return "", false
	}
	return "env:" + evt.Request.EnvelopeID, true
}

// decodeEntry turns a saved envelope back into a queue item, decoding the payload as the
// Socket Mode client does.
func decodeEntry(e channels.InboxEntry) (item, error) {
	kind := socketmode.EventType(e.Kind)
	req := &socketmode.Request{Type: e.Kind, EnvelopeID: e.Ref, Payload: e.Data}
	it := item{kind: kind, req: req, key: e.Key}
	switch kind {
	case socketmode.EventTypeEventsAPI:
		ev, err := slackevents.ParseEvent(e.Data, slackevents.OptionNoVerifyToken())
		if err != nil {
			return item{}, fmt.Errorf("parsing a saved event: %w", err)
		}
		it.data = ev
	case socketmode.EventTypeSlashCommand:
		var cmd slackgo.SlashCommand
		if err := json.Unmarshal(e.Data, &cmd); err != nil {
			return item{}, fmt.Errorf("parsing a saved slash command: %w", err)
		}
		it.data = cmd
	case socketmode.EventTypeInteractive:
		var cb slackgo.InteractionCallback
		if err := json.Unmarshal(e.Data, &cb); err != nil {
			return item{}, fmt.Errorf("parsing a saved interaction: %w", err)
		}
		it.data = cb
	default:
		return item{}, fmt.Errorf("a saved envelope of unknown kind %q", e.Kind)
	}
	return it, nil
}

// settle reports the handler's outcome for a message and retires its envelope. One the
// handler gave up on because plangate is stopping (a context error once Run's context
// has ended) is not handled: it stays in the inbox for the next start, where the engine
// de-duplicates it if it had committed after all.
func (d *dispatcher) settle(ctx context.Context, key string, m core.Message, err error) {
	if ctx.Err() != nil && channels.Stopped(err) && key != "" {
		d.left.Add(1)
		d.c.log.Warn("slack message not handled before the stop; it is kept for the next start",
			"event", m.ID, "slack_channel", m.Address.Chat, "err", err)
		d.c.waiting.forget(m.ID)
		return
	}
	d.c.handled(m, err)
	d.done(ctx, key)
}

// done retires an envelope from the inbox (channels.Inbox.Retire).
func (d *dispatcher) done(ctx context.Context, key string) {
	if key != "" {
		d.in.Retire(ctx, key, channels.DoneSaveDelay, func(err error) {
			d.c.log.Error("saving the slack inbox", "err", err)
		})
	}
}

// Drain implements channels.Drainer for the messages the last Run handed to the engine.
func (c *Channel) Drain(ctx context.Context) (int, error) {
	d := c.disp.Load()
	if d == nil {
		return 0, nil
	}
	return channels.Settle(ctx, &d.inflight, &d.left, d.in.Flush, "slack messages")
}
