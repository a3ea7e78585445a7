package telegram

import (
	"context"
	"sync"
	"time"
)

// pacer keeps outgoing messages under Telegram's limits (about one a second per chat,
// twenty a minute per group, thirty a second in all), so a burst of replies is spread out
// instead of being answered with 429s. Each chat is a GCRA bucket: it may send burst
// messages at once, then one per interval.
type pacer struct {
	tune tuning
	now  func() time.Time

	mu     sync.Mutex
	chats  map[int64]*bucket
	global bucket
}

// globalBurst lets a second's worth of messages (across chats) go at once.
const globalBurst = 30

type bucket struct {
	every time.Duration
	burst int
	tat   time.Time // theoretical arrival time of the next message
}

func newPacer(t tuning) *pacer {
	return &pacer{tune: t, now: time.Now, chats: map[int64]*bucket{},
		global: bucket{every: t.globalEvery, burst: globalBurst}}
}

// reserve books the next send for chat and says how long the caller must wait for it.
// Group and supergroup ids are negative; private chats positive.
func (p *pacer) reserve(chat int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	return max(p.bucket(chat, now).take(now), p.global.take(now))
}

// bucket returns chat's bucket, making it on first use; p.mu must be held.
func (p *pacer) bucket(chat int64, now time.Time) *bucket {
	if b := p.chats[chat]; b != nil {
		return b
	}
	p.forgetIdle(now)
	every := p.tune.privateEvery
	if chat < 0 {
		every = p.tune.groupEvery
	}
	b := &bucket{every: every, burst: max(p.tune.burst, 1)}
	p.chats[chat] = b
	return b
}

// take books one message at now and returns the wait before it may go.
func (b *bucket) take(now time.Time) time.Duration {
	if b.every <= 0 {
		return 0
	}
	if b.tat.Before(now) {
		b.tat = now
	}
	allowAt := b.tat.Add(-time.Duration(b.burst-1) * b.every)
	b.tat = b.tat.Add(b.every)
	if allowAt.After(now) {
		return allowAt.Sub(now)
	}
	return 0
}

// block holds back chat for d, after Telegram answered 429 with retry_after.
func (p *pacer) block(chat int64, d time.Duration) {
	if chat == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	b := p.bucket(chat, now)
	if b.every <= 0 {
		return
	}
	until := now.Add(d).Add(time.Duration(b.burst-1) * b.every)
	if until.After(b.tat) {
		b.tat = until
	}
}

// forgetIdle drops buckets whose chats have been quiet long enough to be full again, so
// the map does not grow with every chat the bot ever spoke in. p.mu must be held.
func (p *pacer) forgetIdle(now time.Time) {
	if len(p.chats) < 1024 {
		return
	}
	for id, b := range p.chats {
		if b.tat.Before(now) {
			delete(p.chats, id)
		}
	}
}

// wait blocks until chat may send.
func (p *pacer) wait(ctx context.Context, chat int64) error {
	return sleep(ctx, p.reserve(chat))
}
