package channels

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Inbox is the durable record of events a platform was told were received and the
// handler has not finished: an adapter adds an event before it acknowledges it and marks
// it done when the handler reports the outcome, so an event acknowledged just before a
// crash is replayed at the next start (the engine de-duplicates what it had committed).
// Adding a key that is pending does nothing, so a redelivery is not queued twice. The
// whole inbox is one small State record of unfinished events.
type Inbox struct {
	st               State
	channel, account string

	mu      sync.Mutex
	seq     int64 // the last sequence number given out
	pending map[string]InboxEntry
	// saving: the keys an AddAll has recorded and not yet seen saved, each with a channel
	// closed once that save has succeeded or failed (and the entry been taken back).
	saving map[string]chan struct{}
	saver  Saver
	// unread: the store failed to read the saved record at load, so it may hold
	// acknowledged events: no save may overwrite it until a read succeeds and its events
	// are merged in (readBack).
	unread bool
}

// InboxEntry is one event waiting in the inbox.
type InboxEntry struct {
	Key  string          `json:"key"`
	Seq  int64           `json:"seq"`            // arrival order
	Kind string          `json:"kind,omitempty"` // the adapter's own label
	Ref  string          `json:"ref,omitempty"`  // e.g. the platform's envelope id
	Data json.RawMessage `json:"data,omitempty"` // the event as the platform sent it
}

// inboxKey is the State key of an adapter's inbox.
const inboxKey = "inbox"

type savedInbox struct {
	Seq     int64        `json:"seq"`
	Pending []InboxEntry `json:"pending,omitempty"`
}

// LoadInbox reads the inbox of one channel account. A record that does not decode is an
// error: the caller decides whether to go on without what it held.
func LoadInbox(ctx context.Context, st State, channel, account string) (*Inbox, error) {
	in := &Inbox{st: st, channel: channel, account: account, pending: map[string]InboxEntry{}}
	v, ok, err := st.ChannelState(ctx, channel, account, inboxKey)
	if err != nil {
		// The store, not the record: what it holds must not be overwritten by an empty
		// inbox. Saves read it first (Flush) and fail until they can.
		in.unread = true
		return in, fmt.Errorf("loading the %s inbox: %w", channel, err)
	}
	if !ok {
		return in, nil
	}
	s, err := decodeInbox(v)
	if err != nil {
		return in, fmt.Errorf("loading the %s inbox: decoding channel state %q: %w", channel, inboxKey, err)
	}
	in.merge(s)
	return in, nil
}

// OpenInbox is LoadInbox at an adapter's start, where a damaged record must not stop the
// bot: an error is logged, and the inbox goes on without what the record held (one the
// store could not read is read again before the first save).
func OpenInbox(ctx context.Context, st State, channel, account string, log *slog.Logger) *Inbox {
	in, err := LoadInbox(ctx, st, channel, account)
	if err != nil {
		log.Error("loading the saved "+channel+" inbox (a damaged record is dropped; one the store could not read is read again before the first save, and events are refused until then)", "err", err)
	}
	return in
}

// decodeInbox reads a stored inbox: its entries with a key, in arrival order, and Seq
// raised to the newest of them.
func decodeInbox(v string) (savedInbox, error) {
	var s savedInbox
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return savedInbox{}, err
	}
	s.Pending = slices.DeleteFunc(s.Pending, func(e InboxEntry) bool { return e.Key == "" })
	slices.SortFunc(s.Pending, bySeq)
	for _, e := range s.Pending {
		s.Seq = max(s.Seq, e.Seq)
	}
	return s, nil
}

func bySeq(a, b InboxEntry) int { return cmp.Compare(a.Seq, b.Seq) }

// AddAll records events that arrived together and saves the inbox with one write before
// it returns, so the caller may then acknowledge them. added[i] says whether es[i] was
// new (a key pending already, or repeated within es, is not: nothing is saved for it). A
// key another AddAll is still saving is waited for: a redelivery that came while the
// first delivery's save was under way is acknowledged only once that save succeeded, and
// taken as new if it failed. On an error nothing is recorded, and no event may be
// acknowledged: the platform will deliver them again.
func (in *Inbox) AddAll(ctx context.Context, es []InboxEntry) (added []bool, err error) {
	for _, e := range es {
		if e.Key == "" {
			return nil, fmt.Errorf("adding to the %s inbox: empty key", in.channel)
		}
		// Checked once here: encode writes the data into every save as it is.
		if len(e.Data) > 0 && !json.Valid(e.Data) {
			return nil, fmt.Errorf("adding to the %s inbox: the data of event %s is not JSON", in.channel, e.Key)
		}
	}
	in.mu.Lock()
	for {
		var wait chan struct{}
		for _, e := range es {
			if ch, ok := in.saving[e.Key]; ok {
				wait = ch
				break
			}
		}
		if wait == nil {
			break
		}
		in.mu.Unlock()
		waitingForSave()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("adding to the %s inbox: waiting for the save of an earlier delivery: %w", in.channel, ctx.Err())
		}
		in.mu.Lock()
	}
	added = make([]bool, len(es))
	var fresh []InboxEntry
	saved := make(chan struct{})
	for i, e := range es {
		if _, ok := in.pending[e.Key]; ok {
			continue
		}
		in.seq++
		e.Seq = in.seq
		in.pending[e.Key] = e
		if in.saving == nil {
			in.saving = map[string]chan struct{}{}
		}
		in.saving[e.Key] = saved
		fresh = append(fresh, e)
		added[i] = true
	}
	if len(fresh) > 0 {
		in.saver.Changed()
	}
	in.mu.Unlock()
	if len(fresh) == 0 {
		return added, nil
	}
	err = in.Flush(ctx)
	in.mu.Lock()
	for _, e := range fresh {
		delete(in.saving, e.Key)
		if cur, ok := in.pending[e.Key]; err != nil && ok && cur.Seq == e.Seq {
			delete(in.pending, e.Key)
		}
	}
	if err != nil {
		in.saver.Changed()
	}
	in.mu.Unlock()
	close(saved)
	if err != nil {
		return nil, err
	}
	return added, nil
}

// waitingForSave is called when an AddAll starts waiting for another's save (a test's
// hook).
var waitingForSave = func() {}

// Pending returns the waiting entries in arrival order.
func (in *Inbox) Pending() []InboxEntry {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.SortedFunc(maps.Values(in.pending), bySeq)
}

// Done removes an entry. It is not saved at once (until the next save a crash only
// replays a finished event, which the engine de-duplicates): call FlushSoon or Flush.
func (in *Inbox) Done(key string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	Delete(&in.saver, in.pending, key)
}

// DoneSaveDelay is how long an event the handler finished may stay in a saved inbox before
// a lazy save drops it. The durable save before every new event's acknowledgement drops
// the finished ones too, so a busy bot pays no lazy save per event; what the delay bounds
// is staleness: a process killed within it replays the finished events of its last
// DoneSaveDelay, which the engine recognises by their inbound keys (kept 48 h).
const DoneSaveDelay = 10 * time.Second

// FlushSoon saves the inbox after delay, coalescing the changes made meanwhile.
func (in *Inbox) FlushSoon(ctx context.Context, delay time.Duration, onErr func(error)) {
	in.mu.Lock()
	unread := in.unread
	in.mu.Unlock()
	if unread {
		return // the next Flush reads the saved record back first
	}
	in.saver.SaveRecordSoon(ctx, delay, in.record(), func(err error) {
		if onErr != nil {
			onErr(fmt.Errorf("saving the %s inbox: %w", in.channel, err))
		}
	})
}

// Retire removes an entry the handler finished and saves the inbox after delay while ctx
// (the adapter's Run) lasts, or at once once it has ended (a shutdown waiting for the
// engine), before the store closes. onErr gets a failed save's error.
func (in *Inbox) Retire(ctx context.Context, key string, delay time.Duration, onErr func(error)) {
	in.Done(key)
	if ctx.Err() == nil {
		in.FlushSoon(context.WithoutCancel(ctx), delay, onErr)
	} else if err := in.Flush(context.WithoutCancel(ctx)); err != nil {
		onErr(err)
	}
}

// Flush saves the inbox if it changed since the last save. Concurrent calls coalesce:
// whoever saves writes the newest state.
func (in *Inbox) Flush(ctx context.Context) error {
	if err := in.readBack(ctx); err != nil {
		return err
	}
	if err := in.saver.SaveRecord(ctx, in.record()); err != nil {
		return fmt.Errorf("saving the %s inbox: %w", in.channel, err)
	}
	return nil
}

// readBack merges the saved record into an inbox whose load could not read it (unread)
// before anything is saved over it. While the store cannot read it, saving fails, so
// nothing is acknowledged.
func (in *Inbox) readBack(ctx context.Context) error {
	in.mu.Lock()
	unread := in.unread
	in.mu.Unlock()
	if !unread {
		return nil
	}
	v, ok, err := in.st.ChannelState(ctx, in.channel, in.account, inboxKey)
	if err != nil {
		return fmt.Errorf("saving the %s inbox: its saved record could not be read, so it is not overwritten: %w", in.channel, err)
	}
	var s savedInbox
	if ok {
		s, _ = decodeInbox(v) // damaged: lost, as at a load
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.unread = false
	in.merge(s)
	in.saver.Changed()
	return nil
}

// merge adds the saved events of s, which are older than any the inbox took since its
// load: those are renumbered after them. in.mu must be held (or in unshared).
func (in *Inbox) merge(s savedInbox) {
	for k, e := range in.pending {
		e.Seq += s.Seq
		in.pending[k] = e
	}
	in.seq += s.Seq
	for _, e := range s.Pending {
		if _, have := in.pending[e.Key]; !have {
			in.pending[e.Key] = e
		}
	}
}

// record is the inbox as its Saver stores it.
func (in *Inbox) record() Record {
	return Record{St: in.st, Channel: in.channel, Account: in.account, Key: inboxKey, Encode: in.encode}
}

// encode is a snapshot of the inbox in its stored form: savedInbox as json.Marshal writes
// it, but with each entry's Data as it is (AddAll checked that it is JSON; a loaded one
// was decoded): json.Marshal would scan and compact it again at every save, inside the
// store's batch.
func (in *Inbox) encode() (string, error) {
	in.mu.Lock()
	s := savedInbox{Seq: in.seq, Pending: slices.Collect(maps.Values(in.pending))}
	in.mu.Unlock()
	slices.SortFunc(s.Pending, bySeq)
	size := 32
	for _, e := range s.Pending {
		size += len(e.Key) + len(e.Kind) + len(e.Ref) + len(e.Data) + 64
	}
	b := append(make([]byte, 0, size), `{"seq":`...)
	b = strconv.AppendInt(b, s.Seq, 10)
	if len(s.Pending) > 0 {
		b = append(b, `,"pending":[`...)
		for i, e := range s.Pending {
			if i > 0 {
				b = append(b, ',')
			}
			data := e.Data
			e.Data = nil
			head, err := json.Marshal(e)
			if err != nil {
				return "", fmt.Errorf("encoding the %s inbox: %w", in.channel, err)
			}
			if len(data) == 0 {
				b = append(b, head...)
				continue
			}
			b = append(b, head[:len(head)-1]...) // without its closing brace
			b = append(b, `,"data":`...)
			b = append(b, data...)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return string(append(b, '}')), nil
}
