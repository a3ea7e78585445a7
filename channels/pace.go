package channels

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Rate is one limit of a platform: Burst messages at once, then one per Every. A zero
// Every is no limit.
type Rate struct {
	Every time.Duration
	Burst int
}

// Pacer keeps outgoing messages under a platform's limits, per conversation (keyed by K)
// and optionally in all, so a burst of replies is spread out instead of rate limited. Each
// limit is a token bucket (golang.org/x/time/rate) read at the pacer's clock. The zero key
// is "no conversation": only the overall limit applies to it.
type Pacer[K comparable] struct {
	// Now is the clock; tests replace it before the first use.
	Now func() time.Time

	rate   func(K) Rate // the limit of a conversation, read when its bucket is made
	global *bucket      // nil without an overall limit
	chats  sync.Map     // K -> *bucket
	count  atomic.Int64
}

// forgetAfter is how many conversations the pacer holds before it drops the idle ones.
const forgetAfter = 1024

// NewPacer returns a pacer with perChat's limit for each conversation and global across
// all of them.
func NewPacer[K comparable](perChat func(K) Rate, global Rate) *Pacer[K] {
	p := &Pacer[K]{Now: time.Now, rate: perChat}
	if global.Every > 0 {
		p.global = newBucket(global)
	}
	return p
}

// bucket is one limit: its token bucket, and until when a platform's rate limit holds it
// back (Unix nanoseconds; 0 = not held).
type bucket struct {
	lim   *rate.Limiter
	burst int
	held  atomic.Int64
}

func newBucket(r Rate) *bucket {
	burst := max(r.Burst, 1)
	return &bucket{lim: rate.NewLimiter(rate.Every(r.Every), burst), burst: burst}
}

// take books one message at now and returns the wait before it may go.
func (b *bucket) take(now time.Time) time.Duration {
	wait := b.lim.ReserveN(now, 1).DelayFrom(now) // n = 1 never exceeds the burst
	if held := time.Duration(b.held.Load() - now.UnixNano()); held > wait {
		wait = held
	}
	return wait
}

// hold makes the bucket's next message wait until d from now.
func (b *bucket) hold(now time.Time, d time.Duration) {
	until := now.Add(d).UnixNano()
	for {
		old := b.held.Load()
		if old >= until || b.held.CompareAndSwap(old, until) {
			return
		}
	}
}

// idle reports whether the bucket is full again and not held back at now.
func (b *bucket) idle(now time.Time) bool {
	return b.lim.TokensAt(now) >= float64(b.burst) && b.held.Load() < now.UnixNano()
}

// chat returns key's bucket, making it on first use; nil when key is not limited.
func (p *Pacer[K]) chat(key K) *bucket {
	var zero K
	if key == zero || p.rate == nil {
		return nil
	}
	if b, ok := p.chats.Load(key); ok {
		return b.(*bucket)
	}
	r := p.rate(key)
	if r.Every <= 0 {
		return nil
	}
	b, loaded := p.chats.LoadOrStore(key, newBucket(r))
	if !loaded && p.count.Add(1) >= forgetAfter {
		p.forgetIdle(p.Now())
	}
	return b.(*bucket)
}

// forgetIdle drops the buckets of conversations quiet long enough to be full again, so the
// map does not grow with every conversation the bot ever spoke in. A message booked in a
// bucket as it is dropped loses only its booking: its conversation was idle.
func (p *Pacer[K]) forgetIdle(now time.Time) {
	p.chats.Range(func(k, v any) bool {
		if v.(*bucket).idle(now) {
			p.chats.Delete(k)
			p.count.Add(-1)
		}
		return true
	})
}

// Reserve books the next message of key and says how long the caller must wait for it.
func (p *Pacer[K]) Reserve(key K) time.Duration {
	now := p.Now()
	var wait time.Duration
	if b := p.chat(key); b != nil {
		wait = b.take(now)
	}
	if p.global != nil {
		wait = max(wait, p.global.take(now))
	}
	return wait
}

// Block holds key back for d, after the platform answered with a rate limit.
func (p *Pacer[K]) Block(key K, d time.Duration) {
	if b := p.chat(key); b != nil {
		b.hold(p.Now(), d)
	}
}

// Wait blocks until key may send its next message.
func (p *Pacer[K]) Wait(ctx context.Context, key K) error { return Sleep(ctx, p.Reserve(key)) }

// Lane is key's lane, for a paced Call.
func (p *Pacer[K]) Lane(key K) Lane { return lane[K]{p: p, key: key} }

type lane[K comparable] struct {
	p   *Pacer[K]
	key K
}

func (l lane[K]) Wait(ctx context.Context) error { return l.p.Wait(ctx, l.key) }
func (l lane[K]) Block(d time.Duration)          { l.p.Block(l.key, d) }
