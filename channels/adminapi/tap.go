package adminapi

import (
	"context"
	"sync"

	"github.com/plangate/plangate/core"
)

// Tap is the engine's Sender with a hook for the admin API: it passes every reply on to
// the channels, and hands the first answer (text or notice) to a change made through the
// API to the request waiting for it. That answer is the engine's own outcome, so the
// API reports exactly what a person clicking the button would have been told. A notice
// (a refusal, or an error) answering an admin request goes to the operator only: the
// chat did not ask for it. Every later reply (the agent's turn) reaches the chat as usual.
type Tap struct {
	next core.Sender

	mu      sync.Mutex
	waiting map[string]chan core.Reply // by Message.ID of the admin's request
}

// NewTap wraps next.
func NewTap(next core.Sender) *Tap {
	return &Tap{next: next, waiting: map[string]chan core.Reply{}}
}

// Send implements core.Sender.
func (t *Tap) Send(ctx context.Context, r core.Reply) (string, error) {
	if r.InReplyTo != "" && (r.Kind == core.ReplyText || r.Kind == core.ReplyNotice) {
		t.mu.Lock()
		ch, ok := t.waiting[r.InReplyTo]
		delete(t.waiting, r.InReplyTo)
		t.mu.Unlock()
		if ok {
			ch <- r // buffered: the waiter may already be gone
			if r.Kind == core.ReplyNotice {
				return "", nil
			}
		}
	}
	return t.next.Send(ctx, r)
}

// Typing passes a typing indicator on when the channels have one.
func (t *Tap) Typing(ctx context.Context, a core.Address) error {
	if ty, ok := t.next.(interface {
		Typing(ctx context.Context, a core.Address) error
	}); ok {
		return ty.Typing(ctx, a)
	}
	return nil
}

// await registers the request with message id id; the returned channel gets its first
// answer. forget must be called when the request is done.
func (t *Tap) await(id string) (<-chan core.Reply, func()) {
	ch := make(chan core.Reply, 1)
	t.mu.Lock()
	t.waiting[id] = ch
	t.mu.Unlock()
	return ch, func() {
		t.mu.Lock()
		delete(t.waiting, id)
		t.mu.Unlock()
	}
}
