package engine

import (
	clist "container/list"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Transcript windows kept in memory, so a turn does not re-read and re-decode the last
// HistoryMessages rows of its session for every message (10 % of a message's CPU). A
// window is exact because it is tied to the session row's version: every commit that
// appends to a transcript writes the session row too, so a window recorded at version v
// is what the store holds while the row is at v. A commit that did not go from the
// window's version (a conflict, another process's write) drops it.
const (
	windowSessions = 512              // windows kept at most (least recently used go first)
	windowIdle     = 30 * time.Minute // a window unused this long is dropped
)

type windowCache struct {
	mu   sync.Mutex
	lru  clist.List // of *window, most recently used first
	byID map[string]*clist.Element
}

type window struct {
	id      string
	version int64
	msgs    []core.ChatMessage // the stored transcript's newest entries, oldest first
	used    time.Time
}

// get returns the window of session id at version, if one is kept: the kept slice itself,
// clipped, so an append to it reallocates instead of writing into the window (whose
// entries are never changed once kept).
func (c *windowCache) get(id string, version int64, now time.Time) ([]core.ChatMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	w := el.Value.(*window)
	if w.version != version || version == 0 {
		return nil, false
	}
	w.used = now
	c.lru.MoveToFront(el)
	return slices.Clip(w.msgs), true
}

// put keeps msgs, read from the store, as the window of session id at version.
func (c *windowCache) put(id string, version int64, msgs []core.ChatMessage, now time.Time) {
	if version == 0 {
		return
	}
	msgs = slices.Clone(msgs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string]*clist.Element{}
	}
	if el, ok := c.byID[id]; ok {
		w := el.Value.(*window)
		w.version, w.msgs, w.used = version, msgs, now
		c.lru.MoveToFront(el)
	} else {
		c.byID[id] = c.lru.PushFront(&window{id: id, version: version, msgs: msgs, used: now})
	}
	for c.lru.Len() > windowSessions {
		c.remove(c.lru.Back())
	}
	for el := c.lru.Back(); el != nil && now.Sub(el.Value.(*window).used) >= windowIdle; el = c.lru.Back() {
		c.remove(el)
	}
}

// committed records a commit of session id from version from to version to that appended
// msgs: the window moves along if it was at from, else it is dropped. limit is the
// window's length (HistoryMessages).
func (c *windowCache) committed(id string, from, to int64, msgs []core.ChatMessage, limit int, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return
	}
	w := el.Value.(*window)
	next, exact := storedForms(msgs)
	if w.version != from || !exact {
		c.remove(el)
		return
	}
	// Appended in place and the front cut off: windows handed out are clipped, so they
	// stay as they were, and the array is copied only when append outgrows it.
	all := clipWindow(append(w.msgs, next...), limit)
	w.msgs, w.version, w.used = all, to, now
	c.lru.MoveToFront(el)
}

// drop forgets the window of session id.
func (c *windowCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.remove(el)
	}
}

func (c *windowCache) remove(el *clist.Element) {
	delete(c.byID, el.Value.(*window).id)
	c.lru.Remove(el)
}

// storedForms are msgs as the store returns them: times in UTC, tool calls through their
// JSON encoding, no empty tool-call list. exact is false when that cannot be known here
// (an entry without a time gets the store's clock).
func storedForms(msgs []core.ChatMessage) (out []core.ChatMessage, exact bool) {
	out = make([]core.ChatMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.At.IsZero() {
			return nil, false
		}
		m.At = m.At.UTC()
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = nil
		} else {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return nil, false
			}
			m.ToolCalls = nil
			if err := json.Unmarshal(b, &m.ToolCalls); err != nil {
				return nil, false
			}
		}
		out = append(out, m)
	}
	return out, true
}

// clipWindow bounds a transcript window h to limit entries (HistoryMessages). Over the
// limit it drops the oldest entries down to three quarters of it, so the window's start,
// and with it every request's prefix up to the newest entries, stays the same for the
// next quarter of the limit's entries instead of moving with each one: a server's prompt
// cache keeps serving the history (docs/performance.md, "The prompt cache").
func clipWindow(h []core.ChatMessage, limit int) []core.ChatMessage {
	if len(h) <= limit {
		return h
	}
	return h[len(h)-max(limit-limit/4, 1):]
}
