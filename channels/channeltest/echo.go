package channeltest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// EchoHandler answers every message at once through Out with "re: " and its text, in
// place of an engine.
type EchoHandler struct{ Out core.Sender }

// EnqueueThen sends the echo on its own goroutine, as the engine's queue would, and
// reports its outcome to then.
func (h EchoHandler) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	go func() {
		_, err := h.Out.Send(ctx, core.Reply{To: m.Address, Text: "re: " + m.Text, InReplyTo: m.ID})
		then(err)
	}()
}

// Replies pairs the replies "re: <text>" a platform fake receives with the messages that
// asked for them, for timing round trips. The fake calls Seen for every message it is
// sent; a round trip calls Expect before it sends text.
type Replies struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

// NewReplies returns an empty Replies.
func NewReplies() *Replies { return &Replies{waiting: map[string]chan time.Time{}} }

// Expect registers text and returns the wait for its reply: the time the fake received
// it, or an error after a while without one.
func (r *Replies) Expect(text string) func() (time.Time, error) {
	got := make(chan time.Time, 1)
	r.mu.Lock()
	r.waiting[text] = got
	r.mu.Unlock()
	return func() (time.Time, error) {
		defer func() {
			r.mu.Lock()
			delete(r.waiting, text)
			r.mu.Unlock()
		}()
		select {
		case at := <-got:
			return at, nil
		case <-time.After(patience):
			return time.Time{}, fmt.Errorf("no reply to %q", text)
		}
	}
}

// Seen is told that the fake received message text at at; a reply to an expected text
// ends its wait.
func (r *Replies) Seen(text string, at time.Time) {
	key, ok := strings.CutPrefix(text, "re: ")
	if !ok {
		return
	}
	r.mu.Lock()
	got := r.waiting[key]
	r.mu.Unlock()
	if got != nil {
		select {
		case got <- at:
		default:
		}
	}
}
