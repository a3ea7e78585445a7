package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plangate/plangate/core"
)

// typingEvery is how long one typing indicator counts for a chat: platforms show one for
// about 5 s (or until the next message), so a second one sooner only costs an API call.
const typingEvery = 4 * time.Second

// DefaultTypingDelay is how long a model call runs before its chat is shown the typing
// indicator (Config.TypingDelay): an answer that comes sooner needs none.
const DefaultTypingDelay = 300 * time.Millisecond

// typist sends typing indicators off the model call's path: in the background, after
// TypingDelay, at most once per typingEvery per chat, and not at all when the answer came
// first. A synchronous one would cost every message a round trip to the platform.
type typist struct {
	mu   sync.Mutex
	last map[core.Address]time.Time // when a chat was last shown the indicator (the engine's clock)
	// after schedules f after d and returns its cancel (time.AfterFunc's Stop); tests
	// replace it to fire the indicator themselves.
	after func(d time.Duration, f func()) func() bool
}

// typingSoon schedules the typing indicator for a model call starting now, unless the
// chat was shown one within typingEvery; the returned stop is called when the model
// answered: an indicator not sent by then is not sent at all.
func (e *Engine) typingSoon(ctx context.Context, a core.Address) (stop func()) {
	ty, ok := e.d.Out.(interface {
		Typing(ctx context.Context, a core.Address) error
	})
	if !ok || !e.typer.due(a, e.d.Now()) {
		return func() {}
	}
	var answered atomic.Bool
	send := func() {
		if answered.Load() || !e.typer.mark(a, e.d.Now()) {
			return
		}
		if err := ty.Typing(ctx, a); err != nil {
			e.d.Log.Debug("typing indicator", "channel", a.Channel, "err", err)
		}
	}
	if e.cfg.TypingDelay <= 0 {
		go send() // no delay: every call outside the window shows it, still in the background
		return func() {}
	}
	cancel := e.typer.after(e.cfg.TypingDelay, send)
	return func() {
		answered.Store(true)
		cancel()
	}
}

// due reports whether a chat may be shown the indicator at now.
func (ty *typist) due(a core.Address, now time.Time) bool {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	last, ok := ty.last[a]
	return !ok || now.Sub(last) >= typingEvery
}

// mark records that the chat is shown the indicator at now, unless another call did so
// within the window (then false). Old entries are dropped now and then.
func (ty *typist) mark(a core.Address, now time.Time) bool {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if last, ok := ty.last[a]; ok && now.Sub(last) < typingEvery {
		return false
	}
	if ty.last == nil {
		ty.last = map[core.Address]time.Time{}
	}
	if len(ty.last) >= 1024 {
		for k, at := range ty.last {
			if now.Sub(at) >= typingEvery {
				delete(ty.last, k)
			}
		}
	}
	ty.last[a] = now
	return true
}
