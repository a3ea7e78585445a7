package channels

import (
	"context"
	"sync/atomic"
	"time"
)

// Saver saves a record that changes often (an inbox) without writing an older snapshot
// over a newer one or writing what is saved already: the owner notes every change
// (Changed, Delete) and calls SaveRecord or SaveRecordSoon when it must reach the store,
// which takes the snapshot when the save runs. The zero value is ready to use.
type Saver struct {
	version atomic.Int64 // bumped by every change
	must    atomic.Int64 // the newest version with a change that must be durable (Changed)
	written atomic.Int64 // the version last saved
	durable atomic.Int64 // the version last saved durably

	soon Later // the delayed save
}

// Changed notes a change that is not saved yet and must reach the disk with the next
// SaveRecord (an event received: the platform is told so once it is saved).
func (s *Saver) Changed() {
	v := s.version.Add(1)
	raise(&s.must, v)
}

// Record is what a Saver saves: the record under (Channel, Account, Key) in St, whose
// value Encode takes from the owner's current state (a snapshot, under its lock).
type Record struct {
	St                    State
	Channel, Account, Key string
	Encode                func() (string, error)
}

// SaveRecord saves r durably unless every change made before the call is saved already:
// durably, or lazily when the changes that must be durable were durable. Concurrent
// callers need not take turns.
func (s *Saver) SaveRecord(ctx context.Context, r Record) error {
	// Read before the save: the caller's changes are at most this version.
	v, m := s.version.Load(), s.must.Load()
	if s.durable.Load() >= v || (s.written.Load() >= v && s.durable.Load() >= m) {
		return nil
	}
	return s.saveIn(ctx, r, false, v)
}

// SaveRecordSoon saves r after delay without waiting for the disk, coalescing the changes
// made meanwhile; onErr (if not nil) gets a failed save's error. It is for finished
// events, whose loss would only replay them: a change that must be durable is written
// again by the next SaveRecord.
func (s *Saver) SaveRecordSoon(ctx context.Context, delay time.Duration, r Record, onErr func(error)) {
	s.soon.After(delay, func() {
		if err := s.saveRecordLazy(ctx, r); err != nil && onErr != nil {
			onErr(err)
		}
	})
}

func (s *Saver) saveRecordLazy(ctx context.Context, r Record) error {
	v := s.version.Load()
	if s.written.Load() >= v {
		return nil
	}
	return s.saveIn(ctx, r, true, v)
}

// saveIn saves r through the store: a snapshot of at least version v, the newest when the
// caller came (a save merged into a later one holds it too).
func (s *Saver) saveIn(ctx context.Context, r Record, lazy bool, v int64) error {
	var ran atomic.Int64
	err := r.St.SetChannelStateWith(ctx, r.Channel, r.Account, r.Key, lazy, func() (string, error) {
		ran.Store(s.version.Load()) // before the snapshot, so the snapshot holds at least this
		return r.Encode()
	})
	if err != nil {
		return err // the store's error names the record
	}
	v = max(v, ran.Load())
	raise(&s.written, v)
	if !lazy {
		raise(&s.durable, v)
	}
	return nil
}

// raise sets a to v unless it holds more already.
func raise(a *atomic.Int64, v int64) {
	for cur := a.Load(); cur < v && !a.CompareAndSwap(cur, v); cur = a.Load() {
	}
}

// Delete removes key from m, noting the change when it was there; the caller holds the
// lock that guards m. A removal is a finished event, whose loss would only replay it: a
// lazy save (SaveRecordSoon) is enough for it.
func Delete[K comparable, V any](s *Saver, m map[K]V, key K) {
	if _, ok := m[key]; ok {
		delete(m, key)
		s.version.Add(1)
	}
}
