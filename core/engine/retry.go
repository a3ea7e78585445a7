package engine

import (
	"context"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Retrying failed sends while running, in each chat's order. A row whose send failed holds
// its session: the session's later rows are not sent beside it but wait behind it
// (deliverRow), and RetryUnsent sends the waiting rows oldest first once the hold has
// passed, stopping at the first that fails again. Other sessions are not held. The hold
// is the longer of a capped backoff and the wait the platform asked for (Retry-After,
// core.SendDelay). Retries are bounded by age only: a row older than outbox_max_age is
// dropped when listed (dropReason), which lets the session's next row go. Only rows this
// process tried or queued are touched: a row never tried is a delivery in progress, and one
// a killed process left is the start-up backlog's.

// Retry backoff: retryBase after a session's first failed attempt, twice as long after
// each further one in a row, at most retryMax; RetryLoop looks for rows due again every
// retryEvery. Each is bounded by a share of outbox_max_age (pace), so a reply is tried
// several times within its age and a hold never outlasts the replies it holds.
const (
	retryBase  = 30 * time.Second
	retryMax   = 10 * time.Minute
	retryEvery = 15 * time.Second
	retryFloor = 100 * time.Millisecond // the least of each, whatever the age
)

// pacing is the retry timing for replies tried until they are maxAge old.
type pacing struct{ base, max, every time.Duration }

// pace is the timing for maxAge (0 = DefaultOutboxMaxAge): the backoff starts at a
// quarter of it and stops growing at half, the retry loop looks every eighth, none above
// the constants above (which a day's age keeps) nor below retryFloor.
func pace(maxAge time.Duration) pacing {
	if maxAge <= 0 {
		maxAge = DefaultOutboxMaxAge
	}
	share := func(limit time.Duration, div time.Duration) time.Duration {
		return max(min(limit, maxAge/div), retryFloor)
	}
	return pacing{base: share(retryBase, 4), max: share(retryMax, 2), every: share(retryEvery, 8)}
}

// sending tracks this process's deliveries: rows being sent now (never retried beside
// themselves), rows waiting to be sent again (they failed, or wait behind one that did),
// and the sessions those rows hold.
type sending struct {
	mu       sync.Mutex
	pace     pacing // set by RetryLoop
	inflight map[int64]bool
	waiting  map[int64]waiter
	held     map[string]*hold
	// unmarked are rows the platform took whose mark as sent failed (the store was out),
	// with the platform's message id: they are marked again, never sent again.
	unmarked map[int64]string
}

// waiter is a row waiting to be sent again: its session, and since when it waits.
type waiter struct {
	session string
	since   time.Time
}

// hold is a session whose rows wait: none is sent before until, and then only by
// RetryUnsent, oldest first.
type hold struct {
	until time.Time
	fails int // failed attempts in a row
	rows  int // rows of the session in waiting
}

func (s *sending) init() {
	s.inflight, s.waiting, s.held, s.unmarked = map[int64]bool{}, map[int64]waiter{}, map[string]*hold{}, map[int64]string{}
	s.pace = pace(0)
}

// paceTo sets the retry timing for replies tried until they are maxAge old.
func (s *sending) paceTo(maxAge time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pace = pace(maxAge)
}

// waits reports whether rows of session wait to be sent again.
func (s *sending) waits(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[session]
	return h != nil && h.rows > 0
}

// holds reports whether a reply of session committed at now would wait (see admit).
func (s *sending) holds(session string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold(session, now) != nil
}

// hold is session's hold at now: nil when there is none, or when no row waits and its
// wait has passed (it is then released). A hold whose rows were all given up stays until
// its wait has passed, so the platform's Retry-After is kept for the next reply too.
// Under s.mu.
func (s *sending) hold(session string, now time.Time) *hold {
	h := s.held[session]
	if h != nil && h.rows <= 0 && !now.Before(h.until) {
		delete(s.held, session)
		return nil
	}
	return h
}

// forget takes row id out of the waiting rows (it was given up elsewhere).
func (s *sending) forget(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unwait(id)
}

// flying reports whether row id is being sent now.
func (s *sending) flying(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[id]
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

// admit is start for a first delivery (not a retry): when session is held the row is not
// sent but queued behind the session's waiting rows (held is true).
func (s *sending) admit(id int64, session string, now time.Time) (ok, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false, false
	}
	if _, waiting := s.waiting[id]; waiting {
		return false, false // RetryUnsent's to send
	}
	if s.hold(session, now) != nil {
		s.wait(id, session, now)
		return false, true
	}
	s.inflight[id] = true
	return true, false
}

// wait puts row id of session among the waiting rows, holding the session. Under s.mu.
func (s *sending) wait(id int64, session string, now time.Time) *hold {
	h := s.held[session]
	if h == nil {
		h = &hold{until: now}
		s.held[session] = h
	}
	if _, ok := s.waiting[id]; !ok {
		s.waiting[id] = waiter{session: session, since: now}
		h.rows++
	}
	return h
}

// unwait takes row id out of the waiting rows. When no row of its session waits any
// more, the session is released at once if its last attempt succeeded, else when the
// wait has passed (hold). Under s.mu.
func (s *sending) unwait(id int64) {
	w, ok := s.waiting[id]
	if !ok {
		return
	}
	delete(s.waiting, id)
	if h := s.held[w.session]; h != nil {
		if h.rows--; h.rows <= 0 && h.fails == 0 {
			delete(s.held, w.session)
		}
	}
}

// end notes how the delivery of row id of session ended at now: sent (or given up), or
// failed, then holding the session for the backoff or the wait the platform asked for
// (delay), whichever is longer.
func (s *sending) end(id int64, session string, failed bool, delay time.Duration, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
	if !failed {
		s.unwait(id)
		if h := s.held[session]; h != nil {
			h.fails = 0 // the platform takes the chat's replies again
			if h.rows <= 0 {
				delete(s.held, session)
			}
		}
		return
	}
	h := s.wait(id, session, now)
	h.fails++
	h.until = now.Add(max(s.pace.delay(h.fails), delay))
}

// sentUnmarked notes that row id was delivered as platform message pid and its mark as
// sent failed; takeUnmarked takes such a row's pid, to mark it instead of sending it.
func (s *sending) sentUnmarked(id int64, pid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unmarked[id] = pid
}

func (s *sending) takeUnmarked(id int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pid, ok := s.unmarked[id]
	delete(s.unmarked, id)
	return pid, ok
}

// retryLater makes row id of session wait like a row whose attempt failed at at, unless
// it is in flight or already waiting (its session's hold is kept).
func (s *sending) retryLater(id int64, session string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, waiting := s.waiting[id]; waiting || s.inflight[id] {
		return
	}
	h := s.wait(id, session, at)
	if h.fails == 0 {
		h.fails = 1
		h.until = at.Add(s.pace.base)
	}
}

// state reports, for row o at now, whether this process is to send it again and whether
// its session's hold has passed. A row waits here when it failed or was queued here; a
// foreign row (a gone process's: live owners' rows are not listed) ahead of rows that
// wait here is sent too, claimed, so it cannot hold them until it ages out.
func (s *sending) state(o core.Outgoing, foreign bool, now time.Time) (waits, due bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, waits = s.waiting[o.ID]
	if _, ok := s.unmarked[o.ID]; ok {
		return !s.inflight[o.ID], true // only its mark is left, which nothing holds
	}
	h := s.hold(o.SessionID, now)
	waits = waits || foreign && h != nil && h.rows > 0
	return waits && !s.inflight[o.ID], h == nil || !now.Before(h.until)
}

// keep forgets the waiting rows missing from unsent (listed at listed) that waited
// before the listing: they were sent or dropped elsewhere. A later one may be of a row
// committed after the listing.
func (s *sending) keep(unsent []core.Outgoing, listed time.Time) {
	ids := make(map[int64]bool, len(unsent))
	for _, o := range unsent {
		ids[o.ID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, w := range s.waiting {
		if !ids[id] && w.since.Before(listed) && !s.inflight[id] {
			s.unwait(id)
		}
	}
}

// delay is the wait after a session's fails-th failed attempt in a row.
func (p pacing) delay(fails int) time.Duration {
	d := p.base
	for i := 1; i < fails && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// RetryUnsent sends again the waiting outbox rows of the given channels whose session's
// hold has passed, each session's oldest first, dropping (as Unsent does) those older
// than maxAge; the backoff of failed sends is paced by maxAge from then on (pace). A session's rows stop at the first that fails again, or at a row this
// process is not waiting to send (a delivery in progress, or another process's). It
// returns how many went out.
func (e *Engine) RetryUnsent(ctx context.Context, channels []string, maxAge time.Duration) int {
	e.sending.paceTo(maxAge)
	now := e.d.Now()
	b, err := e.Unsent(ctx, channels, maxAge, nil)
	if err != nil {
		e.d.Log.Warn("listing replies to retry", "err", err)
		return 0
	}
	e.sending.keep(b.rows, now)
	stopped := map[string]bool{}
	sent := 0
	for i := range b.rows {
		o := &b.rows[i]
		if stopped[o.SessionID] {
			continue
		}
		waits, due := e.sending.state(*o, o.Owner != e.d.Owner, now)
		if !waits || !due {
			stopped[o.SessionID] = true
			continue
		}
		if _, err := e.retryRow(ctx, o); err != nil {
			stopped[o.SessionID] = true
			continue
		}
		sent++
	}
	if sent > 0 {
		e.d.Log.Info("delivered replies whose first send failed", "count", sent)
	}
	e.tellDropped(ctx)
	return sent
}

// retryRow sends waiting row o again; a row another engine committed is claimed first
// (deliverLeft), and waits while another live process holds its session's lease.
func (e *Engine) retryRow(ctx context.Context, o *core.Outgoing) (string, error) {
	if o.Owner != e.d.Owner {
		if _, held := e.holderElsewhere(ctx, o.SessionID); held {
			return "", errHeld
		}
	}
	return e.deliverLeft(ctx, o, true)
}

// RetryLoop runs RetryUnsent every interval (0 = paced by maxAge: every 15 s, or an
// eighth of maxAge when that is less) until ctx ends. From its start, the backoff of
// failed sends is paced by maxAge too (pace).
func (e *Engine) RetryLoop(ctx context.Context, channels []string, maxAge, interval time.Duration) {
	e.sending.paceTo(maxAge)
	if interval <= 0 {
		interval = pace(maxAge).every
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
