package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// keepAlive is how often an idle stream sends a comment, so proxies keep it open.
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

// stream is a conversation's live updates as Server-Sent Events. It starts after the
// Last-Event-ID the browser sends when it reconnects, or after the page's own last event
// (?after=) on the first connection, and writes every event from there on, so nothing
// between the page and the stream, or between two connections, is missed. A stream that
// cannot continue (an id of a previous process, or events that have been dropped) is
// told to reload, which rebuilds the page from the store.
func (c *Channel) stream(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	if !convID.MatchString(id) {
		http.NotFound(w, r)
		return
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
	seq, ok := c.parseEventID(from)
	cv := c.convo(r.Context(), address(v.Name, id))
	tick := time.NewTicker(keepAlive)
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
			_, _ = w.Write([]byte(": keep-alive\n\n"))
		case <-r.Context().Done():
			return
		}
	}
}
