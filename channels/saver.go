package channels

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Saver saves a record that changes often (an inbox) without writing an older snapshot
// over a newer one and without writing what is already saved: the owner calls Changed
// after every change, and Save or SaveSoon when the change must reach the store. The zero
// value is ready to use.
type Saver struct {
	version atomic.Int64 // bumped by every change
	must    atomic.Int64 // the newest version with a change that must be durable (Changed)
	written atomic.Int64 // the version last saved
	durable atomic.Int64 // the version last saved by Save (durably)

	writeMu sync.Mutex // one save at a time, so an older snapshot never overwrites a newer one
	soon    Later      // the delayed save
}

// Changed notes a change that is not saved yet and must reach the disk with the next
// Save (an event received: the platform is told so once it is saved).
func (s *Saver) Changed() {
	v := s.version.Add(1)
	for m := s.must.Load(); m < v && !s.must.CompareAndSwap(m, v); m = s.must.Load() {
	}
}

// Finished notes a change whose loss would only replay a finished event (see Delete):
// a lazy save (SaveSoon) is enough for it.
func (s *Saver) Finished() { s.version.Add(1) }

// Save runs write (which takes its snapshot and stores it durably) unless every change
// made before the call is saved already: durably, or lazily when the changes that must be
// durable were durable. Concurrent calls coalesce: whoever saves writes the newest state,
// and the callers whose changes it held return once it is durable without writing again,
// even when newer changes arrived meanwhile (those are their own callers' to save). Under
// a steady stream of changes every waiter used to write once more in turn.
func (s *Saver) Save(ctx context.Context, write func(context.Context) error) error {
	// Read before the lock: the caller's changes are at most this version.
	return s.saveFrom(ctx, s.version.Load(), s.must.Load(), write)
}

// saveFrom is Save for the changes up to version v, of which those up to m must be durable.
func (s *Saver) saveFrom(ctx context.Context, v, m int64, write func(context.Context) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.durable.Load() >= v || (s.written.Load() >= v && s.durable.Load() >= m) {
		return nil
	}
	// Read before the snapshot, so the snapshot holds at least this version.
	now := s.version.Load()
	if err := write(ctx); err != nil {
		return err
	}
	s.written.Store(now)
	s.durable.Store(now)
	return nil
}

// SaveSoon saves after delay with write, which need not wait for the disk, coalescing
// the changes made meanwhile; onErr (if not nil) gets a failed save's error. It is for
// changes that may wait: finished events, whose loss would only replay them. A change
// that must be durable and is written here is written again by the next Save.
func (s *Saver) SaveSoon(ctx context.Context, delay time.Duration, write func(context.Context) error, onErr func(error)) {
	s.soon.After(delay, func() {
		if err := s.saveLazy(ctx, write); err != nil && onErr != nil {
			onErr(err)
		}
	})
}

func (s *Saver) saveLazy(ctx context.Context, write func(context.Context) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	v := s.version.Load()
	if s.written.Load() == v {
		return nil
	}
	if err := write(ctx); err != nil {
		return err
	}
	s.written.Store(v)
	return nil
}

// Delete removes key from m, noting the change when it was there; the caller holds the
// lock that guards m. A removal is a finished event: it may be saved lazily.
func Delete[K comparable, V any](s *Saver, m map[K]V, key K) {
	if _, ok := m[key]; ok {
		delete(m, key)
		s.Finished()
	}
}
