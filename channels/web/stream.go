package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// keepAlive is how often an idle stream sends a comment, so proxies keep it open, and
// checks that its sign-in still holds (not signed out, not expired).
const keepAlive = 25 * time.Second

// eventID is the SSE id of event seq in this process: "<epoch>-<seq>".
func (c *Channel) eventID(seq uint64) string {
	return c.epoch + "-" + strconv.FormatUint(seq, 10)
}

// parseEventID returns the seq of an id of this process; ok is false for an id of another
// process (before a restart) or garbage.
func (c *Channel) parseEventID(id string) (uint64, bool) {
	epoch, n, ok := strings.Cut(id, "-")
	if !ok || epoch != c.epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	return seq, err == nil
}

// stream is a conversation's live updates as Server-Sent Events, from the Last-Event-ID
// of a reconnecting browser or the page's own last event (?after=), so nothing between
// the page and the stream or between two connections is missed. A stream that cannot
// continue (an id of a previous process, or dropped events) is told to reload.
func (c *Channel) stream(w http.ResponseWriter, r *http.Request, v viewer) {
	_, cv, ok := c.existing(w, r, v)
	if !ok {
		return
	}
	done, open := c.openStream(v.Name)
	if open {
		defer done()
	}
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("after")
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !open {
		// A stream answered with an error status is only "reconnecting" to the page; this
		// event says why, and the page's script stops reconnecting.
		n := c.cfg.MaxStreams
		why := fmt.Sprintf("%s has %d live %s open, the most one user may have (channels.web.max_streams). This page is not updated live: close a tab, then reload it.",
			v.Name, n, plural(n, "page", "pages"))
		_, _ = fmt.Fprintf(w, "event: limit\ndata: %s\n\n", payload(map[string]string{"text": why}))
		_ = rc.Flush()
		return
	}
	seq, ok := c.parseEventID(from)
	tick := time.NewTicker(c.keepAlive)
	defer tick.Stop()
	for {
		var evs []*event
		var changed <-chan struct{}
		if ok {
			evs, changed, ok = cv.since(seq)
		}
		if !ok {
			_, _ = w.Write([]byte("event: reload\ndata: {}\n\n"))
			_ = rc.Flush()
			return
		}
		for _, ev := range evs {
			if _, err := w.Write(ev.frame); err != nil {
				return
			}
			seq = ev.seq
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-changed:
		case <-tick.C:
			if !c.holds(r.Context(), v) {
				return // signed out (maybe on another replica) or expired: the stream ends
			}
			_, _ = w.Write([]byte(": keep-alive\n\n"))
		case <-r.Context().Done():
			return
		}
	}
}

// Several replicas on one database (docs/design.md §14): a page's stream is served by
// the replica the browser is connected to, but the reply it waits for may be sent by
// another (the one holding the session's lease, or the one an admin API decision
// reached). Every reply is an outbox row marked sent by the replica that delivered it, so
// each replica follows the web channel's sent rows and shows those it did not send.
//
// Polling the outbox rather than LISTEN/NOTIFY: the row is exactly what Send would have
// shown, a poll works the same on both drivers without a dedicated connection, and a
// missed notification cannot lose a reply; the cost is up to mirrorEvery of delay.
//
// Ids and sent_at are assigned before their transactions commit, so on PostgreSQL a row
// can become visible after a later one: each poll re-reads the last mirrorWindow and
// remembers the ids handled, rather than following "id > last seen". A replica's own
// replies are recognised by content and skipped once. Read-only answers (status, help)
// are no outbox rows; the replica the page posted to answers them.

const (
	mirrorEvery  = time.Second
	mirrorWindow = 30 * time.Second
	mirrorLimit  = 500
)

// SentReplies lists the replies of a channel marked sent after a time, by any replica
// (*store.Store's SentSince).
type SentReplies interface {
	SentSince(ctx context.Context, channel string, since time.Time, limit int) ([]core.Outgoing, error)
}

// mirror is the follower of one web channel.
type mirror struct {
	src   SentReplies
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	seen  map[int64]time.Time    // outbox ids handled -> when first read
	local map[string][]time.Time // replies this replica sent -> when, not matched yet
}

func newMirror(src SentReplies, now func() time.Time) *mirror {
	return &mirror{src: src, every: mirrorEvery, now: now, seen: map[int64]time.Time{}, local: map[string][]time.Time{}}
}

// replyKey identifies a reply by content, the same for the Reply given to Send or Edit
// and the one decoded from its outbox row (the Hub clears ReplaceID when an edit falls
// back to a new message).
func replyKey(r core.Reply) string {
	r.ReplaceID = ""
	b, _ := json.Marshal(r) // a Reply always encodes
	return string(b)
}

// sent records a reply this replica shows through Send.
func (m *mirror) sent(r core.Reply) {
	k := replyKey(r)
	m.mu.Lock()
	m.local[k] = append(m.local[k], m.now())
	m.mu.Unlock()
}

// fresh returns the rows not handled before and not sent by this replica, and forgets
// what has left the window.
func (m *mirror) fresh(rows []core.Outgoing, baseline bool) []core.Outgoing {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []core.Outgoing
	for _, o := range rows {
		if _, ok := m.seen[o.ID]; ok {
			continue
		}
		m.seen[o.ID] = now
		k := replyKey(o.Reply)
		if ts := m.local[k]; len(ts) > 0 {
			if m.local[k] = ts[1:]; len(ts) == 1 {
				delete(m.local, k)
			}
			continue
		}
		if !baseline {
			out = append(out, o)
		}
	}
	old := now.Add(-2 * mirrorWindow)
	for id, at := range m.seen {
		if at.Before(old) {
			delete(m.seen, id)
		}
	}
	for k, ts := range m.local {
		for len(ts) > 0 && ts[0].Before(old) {
			ts = ts[1:]
		}
		if len(ts) == 0 {
			delete(m.local, k)
		} else {
			m.local[k] = ts
		}
	}
	return out
}

// follow polls the sent replies until ctx ends and shows those of other replicas on the
// pages open here. The first poll only takes note: what was sent before this replica
// started is on the pages it builds from the store.
func (c *Channel) follow(ctx context.Context) {
	m := c.mirror
	tick := time.NewTicker(m.every)
	defer tick.Stop()
	for first := true; ; first = false {
		rows, err := m.src.SentSince(ctx, Name, m.now().Add(-mirrorWindow), mirrorLimit)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("reading replies sent by other replicas", "err", err)
		}
		for _, o := range m.fresh(rows, first) {
			c.showRemote(ctx, o.Reply)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// showRemote shows another replica's reply on the pages of its conversation open here;
// a conversation nobody opened here is left alone (a page opened later is built from the
// store). An edit of a message this replica never had is shown as a new message, except
// plan replies, which re-render the plan's card.
func (c *Channel) showRemote(ctx context.Context, r core.Reply) {
	if c.checkAddress(r.To) != nil {
		return
	}
	c.mu.Lock()
	_, open := c.convos[r.To.SessionID()]
	c.mu.Unlock()
	if !open {
		return
	}
	r.ReplaceID = ""
	c.show(ctx, r)
}
