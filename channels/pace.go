package channels

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Rate is one limit of a platform: Burst messages at once, then one per Every. A zero
// Every is no limit.
type Rate struct {
	Every time.Duration
	Burst int
}

// Pacer keeps outgoing messages under a platform's limits, per conversation (keyed by K)
// and optionally in all, so a burst of replies is spread out instead of rate limited. Each
// limit is a GCRA bucket, a theoretical arrival time moved on by compare-and-swap: a
// message under its limit costs two atomic operations, no lock, goroutine or timer. The
// zero key is "no conversation": only the overall limit applies to it.
type Pacer[K comparable] struct {
	// Now is the clock; tests replace it before the first use.
	Now func() time.Time

	rate   func(K) Rate // the limit of a conversation, read when its bucket is made
	global *bucket      // nil without an overall limit
	epoch  time.Time
	chats  sync.Map // K -> *bucket
	count  atomic.Int64
}

// forgetAfter is how many conversations the pacer holds before it drops the idle ones.
const forgetAfter = 1024

// NewPacer returns a pacer with perChat's limit for each conversation and global across
// all of them.
func NewPacer[K comparable](perChat func(K) Rate, global Rate) *Pacer[K] {
	p := &Pacer[K]{Now: time.Now, rate: perChat, epoch: time.Now()}
	if global.Every > 0 {
		p.global = newBucket(global)
	}
	return p
}

// bucket is one limit. tat is the theoretical arrival time of the next message, in
// nanoseconds since the pacer's epoch; a fresh bucket's is as early as can be.
type bucket struct {
	every int64
	burst int64
	tat   atomic.Int64
}

func newBucket(r Rate) *bucket {
	b := &bucket{every: int64(r.Every), burst: int64(max(r.Burst, 1))}
	b.tat.Store(math.MinInt64)
	return b
}

// take books one message at now and returns the wait before it may go. A bucket booked
// beyond now makes it read the clock again: now may be older than that booking (its
// goroutine paused in between), and counting from it would wait for nothing.
func (b *bucket) take(now int64, clock func() int64) time.Duration {
	for {
		old := b.tat.Load()
		if old > now {
			now = clock()
		}
		tat := max(old, now)
		if b.tat.CompareAndSwap(old, tat+b.every) {
			allowAt := tat - (b.burst-1)*b.every
			return time.Duration(max(allowAt-now, 0))
		}
	}
}

// hold moves the bucket on so that its next message waits until d from now.
func (b *bucket) hold(now func() int64, d time.Duration) {
	for {
		old := b.tat.Load()
		until := now() + int64(d) + (b.burst-1)*b.every
		if old >= until || b.tat.CompareAndSwap(old, until) {
			return
		}
	}
}

func (p *Pacer[K]) now() int64 { return int64(p.Now().Sub(p.epoch)) }

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
		p.forgetIdle(p.now())
	}
	return b.(*bucket)
}

// forgetIdle drops the buckets of conversations quiet long enough to be full again, so the
// map does not grow with every conversation the bot ever spoke in. A message booked in a
// bucket as it is dropped loses only its booking: its conversation was idle.
func (p *Pacer[K]) forgetIdle(now int64) {
	p.chats.Range(func(k, v any) bool {
		if v.(*bucket).tat.Load() < now {
			p.chats.Delete(k)
			p.count.Add(-1)
		}
		return true
	})
}

// Reserve books the next message of key and says how long the caller must wait for it.
func (p *Pacer[K]) Reserve(key K) time.Duration {
	now := p.now()
	var wait time.Duration
	if b := p.chat(key); b != nil {
		wait = b.take(now, p.now)
	}
	if p.global != nil {
		wait = max(wait, p.global.take(now, p.now))
	}
	return wait
}

// Block holds key back for d, after the platform answered with a rate limit.
func (p *Pacer[K]) Block(key K, d time.Duration) {
	if b := p.chat(key); b != nil {
		b.hold(p.now, d)
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
