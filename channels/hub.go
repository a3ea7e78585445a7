package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/plangate/plangate/core"
)

// Hub runs a set of channels and routes replies to them by name.
type Hub struct {
	log      *slog.Logger
	channels []Channel
	byName   map[string]Channel
	onReply  func(channel, outcome string) // see OnReply; nil counts nothing
}

var (
	_ core.Sender = (*Hub)(nil)
	_ Typer       = (*Hub)(nil)
)

// NewHub returns a hub over chs; a nil log discards. Two channels with the same name are a
// wiring mistake, so NewHub panics on them (as http.ServeMux does on a duplicate pattern).
func NewHub(log *slog.Logger, chs ...Channel) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{log: log, byName: make(map[string]Channel, len(chs))}
	for _, ch := range chs {
		name := ch.Name()
		if _, dup := h.byName[name]; dup {
			panic(fmt.Sprintf("channels: two channels named %q", name))
		}
		h.byName[name] = ch
		h.channels = append(h.channels, ch)
	}
	return h
}

// Run runs every channel concurrently with handler and returns when all have returned.
// A channel that returns nil (its input ended) does not stop the others, so `serve` keeps
// its remaining platforms; a caller that wants one channel's end to end everything (`chat`)
// runs that channel by itself. The first channel that fails cancels the others, and its
// error, wrapped with the channel name, is what Run returns. Errors that are only the echo
// of a cancelled context count as a clean stop.
func (h *Hub) Run(ctx context.Context, handler Handler) error {
	if len(h.channels) == 0 {
		return errors.New("running channels: none configured")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, ch := range h.channels {
		wg.Go(func() {
			name := ch.Name()
			h.log.Info("channel started", "channel", name)
			err := ch.Run(ctx, handler)
			if err != nil && ctx.Err() != nil && Stopped(err) {
				err = nil
			}
			if err == nil {
				h.log.Info("channel stopped", "channel", name)
				return
			}
			h.log.Error("channel failed", "channel", name, "err", err)
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("running channel %s: %w", name, err)
				cancel()
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return first
}

// Send delivers r on the channel named by r.To.Channel. With r.ReplaceID set it edits that
// message in place when the channel is an Editor and returns the same id; a channel that
// cannot edit, or an edit that fails, gets the reply as a new message, because a progress
// update that arrives twice is better than one that is lost. A ReplyDecided goes to
// Retire when the channel is a Retirer.
func (h *Hub) Send(ctx context.Context, r core.Reply) (string, error) {
	id, err := h.send(ctx, r)
	if h.onReply != nil {
		h.onReply(r.To.Channel, replyOutcome(err))
	}
	return id, err
}

// OnReply sets fn to be told, for /metrics, the outcome of every Send by channel: sent,
// failed (refused or unreachable) or dropped (no such channel). Call it before the Hub is used.
func (h *Hub) OnReply(fn func(channel, outcome string)) { h.onReply = fn }

// OnInbound hands fn, with the channel's name, to every InboundNoter, so /metrics counts
// the events they drop beside the engine's. Call it before the Hub's channels run.
func (h *Hub) OnInbound(fn func(channel, outcome string)) {
	for _, ch := range h.channels {
		if n, ok := ch.(InboundNoter); ok {
			name := ch.Name()
			n.NoteInbound(func(outcome string) { fn(name, outcome) })
		}
	}
}

// errUnknownChannel is a reply addressed to a channel this Hub does not have.
var errUnknownChannel = errors.New("unknown channel")

func replyOutcome(err error) string {
	switch {
	case err == nil:
		return "sent"
	case errors.Is(err, errUnknownChannel):
		return "dropped"
	}
	return "failed"
}

func (h *Hub) send(ctx context.Context, r core.Reply) (string, error) {
	ch, ok := h.byName[r.To.Channel]
	if !ok {
		return "", fmt.Errorf("sending reply: %w %q", errUnknownChannel, r.To.Channel)
	}
	if rt, ok := ch.(Retirer); ok && r.Kind == core.ReplyDecided {
		if r.Ref == "" {
			return "", nil // no approval, no buttons
		}
		if err := rt.Retire(ctx, r); err != nil {
			return "", fmt.Errorf("retiring buttons on %s: %w", ch.Name(), err)
		}
		return "", nil
	}
	if r.Kind == core.ReplyApprovals {
		// Only a channel that can show it on the buttons' message gets it; elsewhere the
		// decision's own reply has said the same.
		if an, ok := ch.(ApprovalNoter); ok && r.Ref != "" {
			if err := an.NoteApprovals(ctx, r); err != nil {
				return "", fmt.Errorf("showing approvals on %s: %w", ch.Name(), err)
			}
		}
		return "", nil
	}
	if r.ReplaceID != "" {
		if ed, ok := ch.(Editor); ok {
			err := ed.Edit(ctx, r.ReplaceID, r)
			if err == nil {
				return r.ReplaceID, nil
			}
			if ctx.Err() != nil {
				return "", fmt.Errorf("editing message on %s: %w", ch.Name(), err)
			}
			h.log.Warn("edit failed, sending a new message", "channel", ch.Name(), "id", r.ReplaceID, "err", err)
		}
		r.ReplaceID = "" // Send always posts a new message
	}
	id, err := ch.Send(ctx, r)
	if err != nil {
		return id, fmt.Errorf("sending reply on %s: %w", ch.Name(), err)
	}
	return id, nil
}

var _ core.Drafter = (*Hub)(nil)

// CanDraft implements core.Drafter: whether the named channel edits messages in place.
func (h *Hub) CanDraft(channel string) bool {
	_, ok := h.byName[channel].(Drafter)
	return ok
}

// PostDraft implements core.Drafter: Send without ReplaceID, left out of OnReply's counts
// (a draft is not a reply; the answer that replaces it is).
func (h *Hub) PostDraft(ctx context.Context, r core.Reply) (string, error) {
	r.ReplaceID = ""
	return h.send(ctx, r)
}

// EditDraft implements core.Drafter: it edits message id in place and, unlike Send with a
// ReplaceID, never sends a new message when that fails.
func (h *Hub) EditDraft(ctx context.Context, id string, r core.Reply) error {
	d, ok := h.byName[r.To.Channel].(Drafter)
	if !ok {
		return fmt.Errorf("editing a draft: channel %q cannot edit in place", r.To.Channel)
	}
	if err := d.Edit(ctx, id, r); err != nil {
		return fmt.Errorf("editing a draft on %s: %w", r.To.Channel, err)
	}
	return nil
}

// Typing shows a typing indicator in a's conversation when its channel can.
func (h *Hub) Typing(ctx context.Context, a core.Address) error {
	ch, ok := h.byName[a.Channel]
	if !ok {
		return fmt.Errorf("typing: unknown channel %q", a.Channel)
	}
	t, ok := ch.(Typer)
	if !ok {
		return nil
	}
	if err := t.Typing(ctx, a); err != nil {
		return fmt.Errorf("typing on %s: %w", ch.Name(), err)
	}
	return nil
}
