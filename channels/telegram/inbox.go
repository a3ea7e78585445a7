package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/plangate/plangate/channels"
)

// inboxKey is the State key of the update inbox.
const inboxKey = "updates"

// inbox is the durable record of updates between Telegram and the engine. Telegram forgets
// an update once getUpdates is called with a higher offset, so every update is saved here
// before the next poll and leaves only when it is handled. A restart replays the saved
// ones first (the engine de-duplicates those it had committed) and polls from Next.
type inbox struct {
	c *Channel

	mu      sync.Mutex
	next    int64 // the offset of the next getUpdates: one past the newest update received
	pending map[int64]json.RawMessage
	saver   channels.Saver

	// Webhooks deliver updates concurrently and out of order, so "below next" does not
	// mean "seen": the ids received lately are remembered instead (saved, oldest first),
	// and an id at or below forgotten (the newest id evicted from recent) counts as seen.
	recent    recentSet
	forgotten int64
}

// recentIDs is how many webhook update ids are remembered against redeliveries; Telegram
// redelivers an update it got no 200 for within minutes, far fewer updates than this later.
const recentIDs = 512

// savedInbox is the stored form. The webhook ids received lately are RecentRuns, oldest
// first, as packRuns writes them, or in records of older builds Recent, the ids
// themselves, which is read and never written. (An older build reads a record with
// RecentRuns as one without recent ids but with Forgotten: an update redelivered then is
// taken again, and the engine's de-duplication on its key stops a second answer.)
type savedInbox struct {
	// Handled is the update offset proper: every update up to it is handled.
	Handled    int64             `json:"handled"`
	Next       int64             `json:"next"`
	Pending    []json.RawMessage `json:"pending,omitempty"` // oldest first
	Recent     []int64           `json:"recent,omitempty"`  // the old form of RecentRuns
	RecentRuns []int64           `json:"recent_runs,omitempty"`
	Forgotten  int64             `json:"floor,omitempty"`
}

// recentIDs lists the saved webhook ids, oldest first, from either form; an error is a
// record packRuns could not have written.
func (s *savedInbox) recentIDs() ([]int64, error) {
	switch {
	case len(s.RecentRuns) == 0:
		return s.Recent, nil
	case len(s.Recent) > 0:
		return nil, fmt.Errorf("%w: both recent and recent_runs are set", errBadRuns)
	}
	return unpackRuns(s.RecentRuns)
}

func (c *Channel) loadInbox(ctx context.Context) (*inbox, error) {
	in := &inbox{c: c, pending: map[int64]json.RawMessage{}, recent: newRecentSet()}
	v, ok, err := c.st.ChannelState(ctx, Name, c.account, inboxKey)
	if err != nil {
		return nil, fmt.Errorf("loading the update inbox: %w", err)
	}
	if !ok {
		return in, nil
	}
	var s savedInbox
	err = json.Unmarshal([]byte(v), &s)
	var recent []int64
	if err == nil {
		recent, err = s.recentIDs()
	}
	if err != nil {
		// A damaged record must not stop the bot; what it held is replayed by Telegram
		// if it had not been confirmed, and de-duplicated by the engine if it had.
		c.log.Error("the saved update inbox is unreadable; starting from Telegram's offset", "err", err)
		return in, nil
	}
	in.next = max(s.Next, s.Handled+1)
	in.forgotten = s.Forgotten
	for _, id := range recent {
		in.remember(id)
	}
	for _, raw := range s.Pending {
		var head struct {
			ID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.ID == 0 {
			c.log.Error("dropping an unreadable saved update", "err", err)
			continue
		}
		in.pending[head.ID] = raw
	}
	return in, nil
}

// replay returns the saved updates, oldest first.
func (in *inbox) replay() []json.RawMessage {
	in.mu.Lock()
	defer in.mu.Unlock()
	ids := slices.Sorted(maps.Keys(in.pending))
	out := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		out[i] = in.pending[id]
	}
	return out
}

// offset is where the next getUpdates starts.
func (in *inbox) offset() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.next
}

// idResetGap tells a restarted update id sequence from a duplicate: Telegram picks a new
// random first id after a week without updates, while a repeated delivery is recent.
const idResetGap = 100_000

// receive notes a polled update. It reports false for one received before (delivered
// twice), which must not be handled again.
func (in *inbox) receive(id int64, raw json.RawMessage) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if id < in.next {
		if _, pending := in.pending[id]; pending || in.next-id < idResetGap {
			return false
		}
		in.c.log.Warn("telegram update ids started over; following them", "update", id, "expected_from", in.next)
	}
	in.next = id + 1
	in.pending[id] = raw
	in.saver.Changed()
	return true
}

// receiveAny notes an update delivered by webhook, where updates come in any order. It
// reports false for one received before.
func (in *inbox) receiveAny(id int64, raw json.RawMessage) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, pending := in.pending[id]; pending || in.recent.has(id) {
		return false
	}
	if id <= in.forgotten && in.forgotten-id < idResetGap {
		return false
	}
	in.remember(id)
	in.next = max(in.next, id+1)
	in.pending[id] = raw
	in.saver.Changed()
	return true
}

// adopt merges the pending updates of saved, another replica's inbox record, into this
// inbox (not yet saved) and returns those that were new here, oldest first, with their
// ids. One pending here, or received here lately, is not taken twice; forgotten is not
// asked, since the other replica's ids interleave with this one's.
func (in *inbox) adopt(saved string) ([]json.RawMessage, []int64, error) {
	var s savedInbox
	if err := json.Unmarshal([]byte(saved), &s); err != nil {
		return nil, nil, fmt.Errorf("decoding an adopted update inbox: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var raws []json.RawMessage
	var ids []int64
	for _, raw := range s.Pending {
		id, _, err := updateID(raw)
		if _, pending := in.pending[id]; err != nil || pending || in.recent.has(id) {
			continue
		}
		in.remember(id)
		in.next = max(in.next, id+1)
		in.pending[id] = raw
		raws, ids = append(raws, raw), append(ids, id)
	}
	if len(ids) > 0 {
		in.saver.Changed()
	}
	return raws, ids, nil
}

// remember adds id to the recent webhook ids; in.mu must be held (or in unshared).
func (in *inbox) remember(id int64) {
	in.recent.add(id)
	for in.recent.size() > recentIDs {
		in.forgotten = max(in.forgotten, in.recent.evictOldest())
	}
}

// unreceive undoes receiveAny for webhook updates whose save failed: not stored, they are
// not confirmed (the offset goes back to next, unless it is negative) and count as unseen
// when Telegram delivers them again. (The poller keeps a batch and retries its save.)
func (in *inbox) unreceive(ids []int64, next int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, id := range ids {
		delete(in.pending, id)
		in.recent.remove(id)
	}
	if next >= 0 {
		in.next = next
	}
	in.saver.Changed()
}

// done notes that an update is handled.
func (in *inbox) done(id int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	channels.Delete(&in.saver, in.pending, id)
}

// flushSoon saves the inbox lazily after delay (sooner when an earlier save was asked
// for), coalescing the updates finished meanwhile: until the save they would only be
// replayed (channels.DoneSaveDelay).
func (in *inbox) flushSoon(ctx context.Context, delay time.Duration) {
	in.saver.SaveRecordSoon(ctx, delay, in.record(), func(err error) {
		in.c.log.Error("saving the update inbox", "err", err)
	})
}

// flush saves the inbox durably if it changed since the last save.
func (in *inbox) flush(ctx context.Context) error {
	if err := in.saver.SaveRecord(ctx, in.record()); err != nil {
		return fmt.Errorf("saving the update inbox: %w", err)
	}
	return nil
}

// record is the inbox as its Saver stores it.
func (in *inbox) record() channels.Record {
	return channels.Record{St: in.c.st, Channel: Name, Account: in.c.account, Key: inboxKey, Encode: in.encode}
}

// encode is a snapshot of the inbox in its stored form: savedInbox as json.Marshal writes
// it, but with the pending updates as they are. Each is valid JSON already (it was
// decoded), and json.Marshal would scan and compact each again at every save while it is
// pending, inside the store's batch.
func (in *inbox) encode() (string, error) {
	in.mu.Lock()
	s := savedInbox{Next: in.next, Handled: in.next - 1, RecentRuns: packRuns(in.recent.runs), Forgotten: in.forgotten}
	size := 0
	for i, id := range slices.Sorted(maps.Keys(in.pending)) {
		if i == 0 {
			s.Handled = id - 1
		}
		raw := in.pending[id]
		s.Pending = append(s.Pending, raw)
		size += len(raw) + 1
	}
	in.mu.Unlock()
	return string(s.appendJSON(make([]byte, 0, size+4*len(s.RecentRuns)+96))), nil
}

// appendJSON appends s as a JSON object, Pending as they are (see encode).
func (s *savedInbox) appendJSON(b []byte) []byte {
	b = append(b, `{"handled":`...)
	b = strconv.AppendInt(b, s.Handled, 10)
	b = append(b, `,"next":`...)
	b = strconv.AppendInt(b, s.Next, 10)
	if len(s.Pending) > 0 {
		b = append(b, `,"pending":[`...)
		for i, raw := range s.Pending {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, raw...)
		}
		b = append(b, ']')
	}
	for _, f := range []struct {
		name string
		ids  []int64
	}{{"recent", s.Recent}, {"recent_runs", s.RecentRuns}} {
		if len(f.ids) == 0 {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":[`...)
		for i, id := range f.ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, id, 10)
		}
		b = append(b, ']')
	}
	if s.Forgotten != 0 {
		b = append(b, `,"floor":`...)
		b = strconv.AppendInt(b, s.Forgotten, 10)
	}
	return append(b, '}')
}
