package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
)

// Discord never delivers an interaction again: once plangate has answered its callback,
// a crash before the engine commits would lose the person's command or decision for good.
// So every interaction the engine is to handle is saved in a channels.Inbox before the
// callback is answered, and retired when the engine reports its outcome. The next start
// (or a survivor adopting a dead replica's record) replays what is left: the engine's
// inbound keys (message id = interaction id) drop those it had committed, and the outcome
// of the rest follows the saved token up while it is valid, else goes to the channel.

// inboxKey is the State key of the interactions inbox (channels.Inbox's own).
const inboxKey = "inbox"

// tokenLife is how long plangate follows an interaction up with its token after it
// arrived: Discord keeps a token 15 minutes; a minute is left for the follow-up's own
// retries and for clocks that disagree.
const tokenLife = 14 * time.Minute

// doneFlushDelay is how long finished interactions wait to leave the saved inbox
// together: until then a crash only replays them, and the engine drops those.
const doneFlushDelay = 100 * time.Millisecond

// replyNotStored answers an interaction that could not be saved: the person is told
// that nothing happened rather than shown a "thinking…" that no one may ever answer.
const replyNotStored = "plangate could not record this just now, so nothing changed; please try again in a moment."

// ixInbox is the adapter's inbox of interactions and what is in flight from it, shared by
// whichever Run variant takes interactions.
type ixInbox struct {
	in       *channels.Inbox
	inflight sync.WaitGroup // interactions handed over and not yet settled
	left     atomic.Int64   // interactions the handler gave up on while stopping

	mu   sync.Mutex
	busy map[string]bool // keys handed over, not to be replayed beside themselves
}

// take notes that the interaction key is handed to the handler; false when it is
// already (a replay of one in flight).
func (b *ixInbox) take(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy[key] {
		return false
	}
	b.busy[key] = true
	b.inflight.Add(1)
	return true
}

func (b *ixInbox) untake(key string) {
	b.mu.Lock()
	delete(b.busy, key)
	b.mu.Unlock()
	b.inflight.Done()
}

// openInbox loads the inbox when interactions start being taken and returns what is to
// be replayed. Later times (the gateway elected again after another replica held it) it
// merges the saved record into the one in memory: the other leader may have saved
// interactions of its own there.
func (c *Channel) openInbox(ctx context.Context) []channels.InboxEntry {
	c.boxMu.Lock()
	defer c.boxMu.Unlock()
	if c.box == nil {
		c.box = &ixInbox{in: channels.OpenInbox(ctx, c.st, Name, c.botID, c.log), busy: map[string]bool{}}
	} else if saved, ok, err := c.st.ChannelState(ctx, Name, c.botID, inboxKey); err != nil {
		c.log.Error("reading the saved discord inbox", "err", err)
	} else if ok {
		if _, err := c.box.in.Adopt(ctx, saved); err != nil {
			c.log.Error("merging the saved discord inbox", "err", err)
		}
	}
	return c.box.in.Pending()
}

// inbox is the Channel's inbox, nil before interactions were first taken.
func (c *Channel) inbox() *ixInbox {
	c.boxMu.Lock()
	defer c.boxMu.Unlock()
	return c.box
}

// admit saves interaction i (raw: its JSON as Discord sent it, nil to encode it) before
// it is acknowledged. An error means it must not be: nothing was saved.
func (c *Channel) admit(ctx context.Context, i *discordgo.Interaction, raw []byte, kind ixKind) error {
	b := c.inbox()
	if b == nil {
		return errors.New("saving a discord interaction: the inbox is not open")
	}
	if raw == nil {
		var err error
		if raw, err = encodeInteraction(i); err != nil {
			return fmt.Errorf("encoding a discord interaction: %w", err)
		}
	}
	e := channels.InboxEntry{Key: i.ID, Kind: string(kind), Ref: c.now().UTC().Format(time.RFC3339Nano), Data: raw}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.tune.storeWait)
	defer cancel()
	if _, err := b.in.AddAll(sctx, []channels.InboxEntry{e}); err != nil {
		c.log.Error("saving an interaction failed; answering that nothing changed instead of acknowledging it",
			"chat", i.ChannelID, "interaction", i.ID, "err", err)
		return err
	}
	return nil
}

// replay hands the saved interactions es to d's handler as if they had just arrived and
// been acknowledged. One that does not decode, or that the adapter would now answer itself
// (a channel no longer allowed), is dropped.
func (c *Channel) replay(ctx context.Context, d *dispatcher, es []channels.InboxEntry) {
	b := c.inbox()
	n := 0
	for _, e := range es {
		i, at, err := decodeSaved(e)
		if err != nil {
			c.log.Error("dropping a saved discord interaction that cannot be read", "key", e.Key, "err", err)
			b.in.Done(e.Key)
			continue
		}
		if !b.take(e.Key) {
			continue // in flight here already
		}
		c.seen.add(i.ID)
		j, ok := c.fromInteraction(ctx, i)
		if !ok || j.local != nil {
			c.log.Warn("dropping a saved discord interaction plangate no longer handles", "interaction", i.ID)
			b.untake(e.Key)
			b.in.Done(e.Key)
			continue
		}
		j.msg.Replays = true
		w := work{msg: j.msg, key: e.Key}
		if c.now().Sub(at) < tokenLife {
			w.ix = c.register(i, j.kind)
			w.ix.replayed = true
			close(w.ix.acked) // answered before the crash
		}
		n++
		d.deliver(w)
	}
	if n > 0 {
		c.log.Info("replaying discord interactions acknowledged before a restart", "count", n)
	}
	b.in.FlushSoon(context.WithoutCancel(ctx), doneFlushDelay, c.logSaveErr)
}

// encodeInteraction is i as JSON that decodes to the same interaction: the gateway hands
// the adapter a decoded one, and the library leaves a modal's fields out of its encoding
// (ModalSubmitInteractionData.Components is "-"), so they are put back.
func encodeInteraction(i *discordgo.Interaction) ([]byte, error) {
	raw, err := json.Marshal(i)
	if err != nil || i.Type != discordgo.InteractionModalSubmit {
		return raw, err
	}
	data := i.ModalSubmitData()
	d, err := json.Marshal(struct {
		CustomID   string                       `json:"custom_id"`
		Components []discordgo.MessageComponent `json:"components"`
	}{data.CustomID, data.Components})
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["data"] = d
	return json.Marshal(m)
}

// decodeSaved reads a saved interaction and when it arrived.
func decodeSaved(e channels.InboxEntry) (*discordgo.Interaction, time.Time, error) {
	var i discordgo.Interaction
	if err := json.Unmarshal(e.Data, &i); err != nil {
		return nil, time.Time{}, fmt.Errorf("decoding a saved interaction: %w", err)
	}
	if i.ID == "" || i.ID != e.Key || i.Token == "" {
		return nil, time.Time{}, errors.New("decoding a saved interaction: no id or token")
	}
	at, err := time.Parse(time.RFC3339Nano, e.Ref)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("decoding when a saved interaction arrived: %w", err)
	}
	return &i, at, nil
}

// settle retires the inbox entry of w once the handler reported its outcome, except one
// given up on because plangate is stopping: it did not commit, so it stays for the next start.
func (d *dispatcher) settle(w work, err error) bool {
	b := d.c.inbox()
	defer b.untake(w.key)
	stopping := d.run.Err() != nil
	if stopping && channels.Stopped(err) {
		b.left.Add(1)
		d.c.log.Warn("discord interaction not handled before the stop; it is kept for the next start", "interaction", w.key, "err", err)
		return false
	}
	b.in.Retire(d.run, w.key, doneFlushDelay, d.c.logSaveErr)
	return true
}

func (c *Channel) logSaveErr(err error) { c.log.Error("saving the discord inbox", "err", err) }

// InboxAccount implements channels.InboxAdopter: the bot whose inbox this adapter keeps.
func (c *Channel) InboxAccount() string { return c.botID }

// AdoptInbox implements channels.InboxAdopter, while interactions are being taken here.
func (c *Channel) AdoptInbox(ctx context.Context, saved string) (int, error) {
	d := c.ixd.Load()
	b := c.inbox()
	if d == nil || b == nil {
		return 0, channels.ErrNotReceiving
	}
	es, err := b.in.AdoptReadable(ctx, saved, c.log)
	if err != nil {
		return 0, err
	}
	c.replay(context.WithoutCancel(ctx), d, es)
	return len(es), nil
}

// Drain implements channels.Drainer.
func (c *Channel) Drain(ctx context.Context) (int, error) {
	b := c.inbox()
	if b == nil {
		return 0, nil
	}
	return channels.Settle(ctx, &b.inflight, &b.left, b.in.Flush, "discord interactions")
}

// receiveInteractions opens the inbox, makes d the dispatcher interactions go to and
// replays what the inbox holds; the returned function stops that and saves the inbox.
func (c *Channel) receiveInteractions(ctx context.Context, d *dispatcher) func() {
	es := c.openInbox(ctx)
	c.ixd.Store(d)
	c.replay(ctx, d, es)
	return func() {
		c.ixd.CompareAndSwap(d, nil)
		if err := c.inbox().in.Flush(context.WithoutCancel(ctx)); err != nil {
			c.logSaveErr(err)
		}
	}
}
