package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Riders are bookkeeping writes that need no transaction of their own: a reply's
// mark-sent. MarkSentSoon queues one and returns; the next write of this process, of any
// session, carries every queued rider in its transaction (after its own statements, so
// inside its savepoint of a group commit), and FlushSent writes what is still queued on
// its own. The engine flushes before it waits on anything outside the process (a model
// call, a tool) and when a job ends, so a mark waits at most for local work: the
// at-least-once window between a platform accepting a reply and its row being marked
// stays what it was. In a turn the lease release carries the answer's mark, and the lease
// acquire the marks of the decision that started the turn, so the row is marked in the
// same transaction that lets another replica near the session.
//
// A rider is idempotent (a mark only changes a row that is neither sent nor dropped), so
// running it with a later write, or again, is harmless. When the write carrying riders
// fails (a conflict, a refused lease), they are undone with it and written at once on
// their own.
type riders struct {
	mu     sync.Mutex
	queued []step
}

// take hands every queued rider to the write that will carry it.
func (r *riders) take() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.queued
	r.queued = nil
	return out
}

// add queues riders (again, when the write that carried them failed: they go first, being
// the older).
func (r *riders) add(steps ...step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued = append(slices.Clip(steps), r.queued...)
}

// MarkSentSoon is MarkSent riding the next write (see riders): it records that reply id
// reached its platform as message platformID once that write or FlushSent commits. On
// PostgreSQL too: a mark of its own is a transaction and a round trip, while riding the
// next write (in a turn, the lease's acquire or release, which stay one round trip, see
// oneTrip) it is one more statement in a batch sent anyway. The caller does not wait for
// it either way.
func (s *Store) MarkSentSoon(ctx context.Context, id int64, platformID string, at time.Time) error {
	s.riders.add(step{what: "marking outbox reply " + strconv.FormatInt(id, 10) + " sent",
		q:    markSentQuery,
		args: []any{formatTime(at), platformID, id}, rider: true})
	return nil
}

// FlushSent writes the queued riders that no write carried yet, as one lazy commit.
func (s *Store) FlushSent(ctx context.Context) error {
	r := s.riders.take()
	if len(r) == 0 {
		return nil
	}
	if err := s.runOwn(ctx, r, true); err != nil {
		s.riders.add(r...)
		return fmt.Errorf("marking replies sent: %w", explain(err))
	}
	return nil
}

// runSteps executes steps in one transaction and commits it if every outcome is as
// expected; otherwise nothing of it remains. The transaction also carries the queued
// riders, after the steps. When it fails, the riders are written on their own, so a
// conflict of the carrier does not leave them waiting for another write.
func (s *Store) runSteps(ctx context.Context, steps []step, lazy bool) error {
	r := s.riders.take()
	if len(r) == 0 {
		return s.runOwn(ctx, steps, lazy)
	}
	err := s.runOwn(ctx, append(slices.Clip(steps), r...), lazy)
	if err != nil {
		s.riders.add(r...)
		_ = s.FlushSent(context.WithoutCancel(ctx)) // a failure leaves them queued for the next write
	}
	return err
}
