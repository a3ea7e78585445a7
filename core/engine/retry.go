package engine

import (
	"context"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Retrying failed sends while running: RetryUnsent sends a row whose delivery failed again
// once its backoff has passed, so a platform outage of a few minutes does not wait for the
// next start. Only rows whose send failed in this process are touched: a row never tried
// is a delivery in progress, and one a killed process left is the start-up backlog's.

// Retry backoff: retryBase after the failed attempt, twice as long after each further
// one, at most retryMax.
const (
	retryBase = 30 * time.Second
	retryMax  = 10 * time.Minute
)

// DefaultRetryEvery is how often RetryLoop looks for rows due again.
const DefaultRetryEvery = 15 * time.Second

// sending tracks this process's deliveries: rows being sent now (never retried beside
// themselves) and when each row's last attempt failed.
type sending struct {
	mu       sync.Mutex
	inflight map[int64]bool
	failedAt map[int64]time.Time
}

// start marks row id in flight; false when it is already.
func (s *sending) start(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false
	}
	s.inflight[id] = true
	return true
}

// end notes how the delivery of row id ended.
func (s *sending) end(id int64, failed bool, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
	if failed {
		s.failedAt[id] = at
	} else {
		delete(s.failedAt, id)
	}
}

// retryLater makes row id due like a row whose attempt failed at at, unless it is in
// flight or already waiting for a retry (its backoff is kept).
func (s *sending) retryLater(id int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, waiting := s.failedAt[id]; !waiting && !s.inflight[id] {
		s.failedAt[id] = at
	}
}

// due reports whether row o may be tried again at now: its last attempt failed in this
// process, it is not in flight, and its backoff has passed.
func (s *sending) due(o core.Outgoing, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, failed := s.failedAt[o.ID]
	return failed && !s.inflight[o.ID] && !now.Before(at.Add(retryDelay(o.Attempts)))
}

// keep forgets the failures of rows missing from unsent (listed at listed) that failed
// before the listing: a later failure may be of a row committed after it.
func (s *sending) keep(unsent []core.Outgoing, listed time.Time) {
	ids := make(map[int64]bool, len(unsent))
	for _, o := range unsent {
		ids[o.ID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, at := range s.failedAt {
		if !ids[id] && at.Before(listed) {
			delete(s.failedAt, id)
		}
	}
}

// retryDelay is the wait after a row's attempts-th failed attempt.
func retryDelay(attempts int) time.Duration {
	d := retryBase
	for i := 1; i < attempts && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// RetryUnsent sends again the outbox rows of the given channels that are due, dropping
// (as Unsent does) those older than maxAge or tried too often. It returns how many went out.
func (e *Engine) RetryUnsent(ctx context.Context, channels []string, maxAge time.Duration) int {
	now := e.d.Now()
	b, err := e.Unsent(ctx, channels, maxAge, nil)
	if err != nil {
		e.d.Log.Warn("listing replies to retry", "err", err)
		return 0
	}
	e.sending.keep(b.rows, now)
	due := b.rows[:0]
	for _, o := range b.rows {
		if e.sending.due(o, now) {
			due = append(due, o)
		}
	}
	b.rows = due
	sent := b.deliver(ctx)
	if sent > 0 {
		e.d.Log.Info("delivered replies whose first send failed", "count", sent)
	}
	return sent
}

// RetryLoop runs RetryUnsent every interval (0 = DefaultRetryEvery) until ctx ends.
func (e *Engine) RetryLoop(ctx context.Context, channels []string, maxAge, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultRetryEvery
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			e.RetryUnsent(ctx, channels, maxAge)
		}
	}
}
