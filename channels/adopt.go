package channels

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// InboxAdopter is a Channel that can take in, while it runs, the inbox another process of
// the same deployment left behind: on several replicas each keeps its own inbox record,
// and a replica that dies leaves there the events it acknowledged to the platform and had
// not handled, which the platform will not deliver again.
//
// AdoptInbox decodes saved, an inbox record as this adapter itself saves it (for the
// account InboxAccount names), and merges its pending events into the adapter's own
// inbox, saved durably before it returns; then it hands the events that were new to the
// handler as replays, as a restart replays its own (the engine's inbound keys drop those
// that had been handled). Once it returns nil the caller may delete the adopted record: a
// crash before that only adopts it again, which the inbox keys and the engine make
// harmless. It reports how many events were new here. A record that does not decode is
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

// Adopt merges the pending entries of saved, the record of another Inbox, into this one
// and saves it durably before it returns. It returns the entries that were new here, in
// the order they arrived there, with this inbox's sequence numbers; a key pending here
// already is not taken twice. A record that does not decode is an error, with nothing
// changed (ErrUnreadable).
func (in *Inbox) Adopt(ctx context.Context, saved string) ([]InboxEntry, error) {
	var s savedInbox
	if err := json.Unmarshal([]byte(saved), &s); err != nil {
		return nil, fmt.Errorf("decoding an adopted %s inbox: %w: %w", in.channel, ErrUnreadable, err)
	}
	es := slices.DeleteFunc(s.Pending, func(e InboxEntry) bool { return e.Key == "" })
	slices.SortFunc(es, func(a, b InboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
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

// AdoptReadable is Adopt as an adapter's AdoptInbox uses it: a record that does not decode
// is logged and dropped (no entries, no error), as a damaged inbox is at start, so the
// takeover deletes it instead of trying again for ever.
func (in *Inbox) AdoptReadable(ctx context.Context, saved string, log *slog.Logger) ([]InboxEntry, error) {
	es, err := in.Adopt(ctx, saved)
	if errors.Is(err, ErrUnreadable) {
		log.Error("dropping an adopted "+in.channel+" inbox that cannot be read", "err", err)
		return nil, nil
	}
	return es, err
}
