package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// InboxAdopter is a Channel that can take in, while it runs, the inbox record another
// replica of the deployment left behind when it died: the events it acknowledged and had
// not handled, which the platform will not deliver again.
//
// AdoptInbox merges the pending events of saved (an inbox record as this adapter saves it
// for the account InboxAccount names) into the adapter's own inbox, saved durably before
// it returns, and hands those new here to the handler as replays (the engine's inbound
// keys drop those that had been handled). It reports how many were new. Once it returns
// nil the caller may delete the adopted record: a crash before that only adopts it again,
// which the inbox keys and the engine make harmless. A record that does not decode is
// dropped (logged), as a damaged inbox is at start; ErrNotReceiving means Run is not
// taking events, and the record must stay for later.
type InboxAdopter interface {
	Channel
	InboxAccount() string
	AdoptInbox(ctx context.Context, saved string) (int, error)
}

// ErrNotReceiving is AdoptInbox's answer while the adapter's Run is not taking events.
var ErrNotReceiving = errors.New("the channel is not receiving events")

// ErrUnreadable is Adopt's error for a record that does not decode.
var ErrUnreadable = errors.New("the record is unreadable")

// Adopt merges the pending entries of saved, the record of another Inbox, into this one,
// saved durably before it returns, and returns those that were new here in the order they
// arrived there, with this inbox's sequence numbers. A record that does not decode is an
// error wrapping ErrUnreadable, with nothing changed.
func (in *Inbox) Adopt(ctx context.Context, saved string) ([]InboxEntry, error) {
	s, err := decodeInbox(saved)
	if err != nil {
		return nil, fmt.Errorf("decoding an adopted %s inbox: %w: %w", in.channel, ErrUnreadable, err)
	}
	es := s.Pending
	if len(es) == 0 {
		return nil, nil
	}
	added, err := in.AddAll(ctx, es)
	if err != nil {
		return nil, fmt.Errorf("adopting a %s inbox: %w", in.channel, err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []InboxEntry
	for i, e := range es {
		if cur, ok := in.pending[e.Key]; ok && added[i] {
			out = append(out, cur)
		}
	}
	return out, nil
}

// AdoptReadable is Adopt for an adapter's AdoptInbox: a record that does not decode is
// logged and dropped (no error), as a damaged inbox is at start, so the takeover deletes it
// instead of trying again for ever.
func (in *Inbox) AdoptReadable(ctx context.Context, saved string, log *slog.Logger) ([]InboxEntry, error) {
	es, err := in.Adopt(ctx, saved)
	if errors.Is(err, ErrUnreadable) {
		log.Error("dropping an adopted "+in.channel+" inbox that cannot be read", "err", err)
		return nil, nil
	}
	return es, err
}
