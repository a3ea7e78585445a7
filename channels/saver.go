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
	written atomic.Int64 // the version last saved

	writeMu sync.Mutex // one save at a time, so an older snapshot never overwrites a newer one
	soon    Later      // the delayed save
}

// Changed notes a change that is not saved yet.
func (s *Saver) Changed() { s.version.Add(1) }

// Save runs write (which takes its snapshot and stores it) unless nothing changed since
// the last save. Concurrent calls coalesce: whoever saves writes the newest state, and the
// others find nothing left to do.
func (s *Saver) Save(ctx context.Context, write func(context.Context) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// Read before the snapshot, so the snapshot holds at least this version.
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

// SaveSoon is Save after delay, coalescing the changes made meanwhile; onErr (if not nil)
// gets a failed save's error. It is for changes that may wait: finished events, whose loss
// would only replay them.
func (s *Saver) SaveSoon(ctx context.Context, delay time.Duration, write func(context.Context) error, onErr func(error)) {
	s.soon.After(delay, func() {
		if err := s.Save(ctx, write); err != nil && onErr != nil {
			onErr(err)
		}
	})
}

// Delete removes key from m, noting the change when it was there; the caller holds the
// lock that guards m.
func Delete[K comparable, V any](s *Saver, m map[K]V, key K) {
	if _, ok := m[key]; ok {
		delete(m, key)
		s.Changed()
	}
}
