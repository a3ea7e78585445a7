package channels

import (
	"context"
	"fmt"
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

	// One save at a time, so an older snapshot never overwrites a newer one: busy is
	// closed when the save in flight ends (nil when none is), which wakes every caller
	// waiting for it at once to see whether it held their changes. (A mutex handed
	// the callers on one at a time, each needing the CPU in turn to find it had nothing
	// to do: on two busy cores a queue of 20 webhook requests took milliseconds.)
	mu   sync.Mutex
	busy chan struct{}
	soon Later // the delayed save
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
// even when newer changes arrived meanwhile (those are their own callers' to save), so a
// steady stream of changes does not make every waiter write once more in turn.
func (s *Saver) Save(ctx context.Context, write func(context.Context) error) error {
	// Read before the lock: the caller's changes are at most this version.
	return s.saveFrom(ctx, s.version.Load(), s.must.Load(), write)
}

// saveFrom is Save for the changes up to version v, of which those up to m must be durable.
func (s *Saver) saveFrom(ctx context.Context, v, m int64, write func(context.Context) error) error {
	return s.run(ctx, true, func() bool {
		return s.durable.Load() >= v || (s.written.Load() >= v && s.durable.Load() >= m)
	}, write)
}

// run waits for the save in flight until saved reports that it needs none, or runs
// write as the next one, with a snapshot at least as new as the version when it starts.
func (s *Saver) run(ctx context.Context, durable bool, saved func() bool, write func(context.Context) error) error {
	s.mu.Lock()
	for !saved() {
		busy := s.busy
		if busy == nil {
			return s.lead(ctx, durable, write)
		}
		s.mu.Unlock()
		<-busy
		s.mu.Lock()
	}
	s.mu.Unlock()
	return nil
}

// lead runs write as the save in flight; s.mu is held on entry and released.
func (s *Saver) lead(ctx context.Context, durable bool, write func(context.Context) error) (err error) {
	end := make(chan struct{})
	s.busy = end
	s.mu.Unlock()
	now := s.version.Load() // read before the snapshot, so the snapshot holds at least this
	wrote := false
	defer func() { // even when write panics, or every later save would wait forever
		s.mu.Lock()
		if wrote {
			s.written.Store(now)
			if durable {
				s.durable.Store(now)
			}
		}
		s.busy = nil
		close(end)
		s.mu.Unlock()
	}()
	err = write(ctx)
	wrote = err == nil
	return err
}

// Record is what a Saver saves: the record under (Channel, Account, Key) in St, whose
// value Encode takes from the owner's current state (a snapshot, under its lock).
type Record struct {
	St                    State
	Channel, Account, Key string
	Encode                func() (string, error)
}

// SaveRecord is Save for a record: through St's SetChannelStateWith when it is a
// SnapshotState (the snapshot is taken when the store runs the save, so concurrent
// callers need not take turns), else one save at a time as Save does.
func (s *Saver) SaveRecord(ctx context.Context, r Record) error {
	v, m := s.version.Load(), s.must.Load()
	ss, ok := r.St.(SnapshotState)
	if !ok {
		return s.saveFrom(ctx, v, m, func(ctx context.Context) error { return r.save(ctx, false) })
	}
	if s.durable.Load() >= v || (s.written.Load() >= v && s.durable.Load() >= m) {
		return nil
	}
	return s.saveIn(ctx, ss, r, false, v)
}

// SaveRecordSoon is SaveSoon for a record (see SaveRecord); the save need not wait
// for the disk.
func (s *Saver) SaveRecordSoon(ctx context.Context, delay time.Duration, r Record, onErr func(error)) {
	s.soon.After(delay, func() {
		err := s.saveRecordLazy(ctx, r)
		if err != nil && onErr != nil {
			onErr(err)
		}
	})
}

func (s *Saver) saveRecordLazy(ctx context.Context, r Record) error {
	ss, ok := r.St.(SnapshotState)
	if !ok {
		return s.saveLazy(ctx, func(ctx context.Context) error { return r.save(ctx, true) })
	}
	v := s.version.Load()
	if s.written.Load() >= v {
		return nil
	}
	return s.saveIn(ctx, ss, r, true, v)
}

// saveIn saves r through the store, which takes the snapshot when the save runs: at
// least version v, the newest when the caller came (a save merged into a later one
// holds it too).
func (s *Saver) saveIn(ctx context.Context, ss SnapshotState, r Record, lazy bool, v int64) error {
	var ran atomic.Int64
	err := ss.SetChannelStateWith(ctx, r.Channel, r.Account, r.Key, lazy, func() (string, error) {
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

// save encodes and stores r, lazily (when St can) or durably.
func (r Record) save(ctx context.Context, lazy bool) error {
	value, err := r.Encode()
	if err != nil {
		return err
	}
	if lazy {
		err = SetStateLazy(ctx, r.St, r.Channel, r.Account, r.Key, value)
	} else {
		err = r.St.SetChannelState(ctx, r.Channel, r.Account, r.Key, value)
	}
	if err != nil {
		return fmt.Errorf("saving channel state %q: %w", r.Key, err)
	}
	return nil
}

// raise sets a to v unless it holds more already.
func raise(a *atomic.Int64, v int64) {
	for cur := a.Load(); cur < v && !a.CompareAndSwap(cur, v); cur = a.Load() {
	}
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
	v := s.version.Load()
	return s.run(ctx, false, func() bool { return s.written.Load() >= v }, write)
}

// Delete removes key from m, noting the change when it was there; the caller holds the
// lock that guards m. A removal is a finished event: it may be saved lazily.
func Delete[K comparable, V any](s *Saver, m map[K]V, key K) {
	if _, ok := m[key]; ok {
		delete(m, key)
		s.Finished()
	}
}
