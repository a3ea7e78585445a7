package nudges

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/plangate/plangate/core"
)

// firing is one claimed occurrence waiting to be handed to the engine.
type firing struct {
	n           core.Nudge
	scheduledAt time.Time
}

// sessionBatch is what one dispatch round has for one session.
type sessionBatch struct {
	missed []core.MissedNudge
	fired  []firing
}

// dispatchDue is one round, run by cron when the earliest schedule falls due: every due
// occurrence is claimed as fired or missed, then each session gets its missed report and
// its nudges, in that order, on a goroutine of its own (a long agent turn holds up no
// other session).
func (s *Scheduler) dispatchDue() {
	now := s.now().UTC()
	s.mu.Lock()
	ctx := s.runCtx
	s.wakeAt = time.Time{} // the wake-up that started this round is spent
	due := s.queue.popDue(now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.armLocked()
		s.mu.Unlock()
	}()

	// Several reminders of one decision due in the same round (after downtime with a long
	// grace) would arrive as a burst: only the latest is delivered, the others count as
	// missed.
	latest := map[string]time.Time{}
	for _, it := range due {
		if it.n.Action == core.NudgeRemind {
			k := it.n.SessionID + "\x00" + it.n.PlanID
			if it.n.NextFireAt.After(latest[k]) {
				latest[k] = it.n.NextFireAt
			}
		}
	}
	batches := map[string]*sessionBatch{}
	var order []string // sessions in the order their first occurrence fell due
	resync := map[string]bool{}
	for i, it := range due {
		if ctx.Err() != nil {
			s.requeue(due[i:]) // shutting down: leave the rest for the next start
			break
		}
		superseded := it.n.Action == core.NudgeRemind && it.n.NextFireAt.Before(latest[it.n.SessionID+"\x00"+it.n.PlanID])
		f, outcome, res := s.claim(ctx, it, now, superseded)
		switch res {
		case refused:
			resync[f.n.SessionID] = true
			continue
		case failed:
			continue
		}
		b := batches[f.n.SessionID]
		if b == nil {
			b = &sessionBatch{}
			batches[f.n.SessionID] = b
			order = append(order, f.n.SessionID)
		}
		if outcome == OutcomeMissed {
			b.missed = append(b.missed, core.MissedNudge{Nudge: f.n, ScheduledAt: f.scheduledAt})
		} else {
			b.fired = append(b.fired, f)
		}
	}
	for _, sid := range order {
		s.deliver(ctx, sid, batches[sid])
	}
	// The store refused some occurrences: another process fired them, or they were
	// cancelled. Read those sessions again so what is still active stays queued.
	for sid := range resync {
		s.SessionChanged(ctx, sid)
	}
}

// claimResult says how an attempt to claim an occurrence ended.
type claimResult int

const (
	claimed claimResult = iota + 1 // recorded as fired or missed: ours to hand on
	refused                        // not ours: cancelled, finished, or fired elsewhere
	failed                         // the store failed; the item is retried later
)

// claim records the occurrence of a due item in the store with its outcome and moves the
// item on: to its next time, out of the queue, or (after a store error) to a retry.
func (s *Scheduler) claim(ctx context.Context, it *item, now time.Time, superseded bool) (firing, string, claimResult) {
	s.mu.Lock()
	n, sched := it.n, it.sched
	s.mu.Unlock()
	occ, next := catchUp(sched, n.NextFireAt, now)
	outcome := OutcomeFired
	if superseded || (now.Sub(occ) >= s.grace && n.Action != core.NudgeExpire) {
		outcome = OutcomeMissed
	}
	var ok bool
	var err error
	if rc, can := s.d.(ReminderClaimer); can && outcome == OutcomeFired && n.Action == core.NudgeRemind {
		ok, err = rc.ClaimReminder(ctx, n, occ, now, next)
	} else {
		ok, err = s.st.FireNudge(ctx, n.ID, occ, outcome, now, next)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.log.Error("recording a nudge occurrence; retrying", "id", n.ID, "session", n.SessionID,
			"scheduled", occ, "retry_in", retryDelay.String(), "err", err)
		if !it.dropped {
			it.at = now.Add(retryDelay)
			s.queue.push(it)
		}
		return firing{n: n}, "", failed
	case !ok:
		s.log.Debug("nudge occurrence not ours to fire", "id", n.ID, "session", n.SessionID, "scheduled", occ)
		if !it.dropped {
			s.dropLocked(it)
		}
		return firing{n: n}, "", refused
	}
	if outcome == OutcomeMissed {
		it.n.Missed++
	} else {
		it.n.Fired++
	}
	if next.IsZero() {
		if !it.dropped {
			s.dropLocked(it)
		}
	} else if !it.dropped {
		it.n.NextFireAt, it.at = next, next
		s.queue.push(it)
	}
	s.log.Info("nudge "+outcome, "id", n.ID, "session", n.SessionID, "action", n.Action, "scheduled", occ, "next", next)
	return firing{n: n, scheduledAt: occ}, outcome, claimed
}

// requeue puts items back unchanged.
func (s *Scheduler) requeue(items []*item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		if !it.dropped {
			s.queue.push(it)
		}
	}
}

// deliver hands one session's batch to the engine, each call through cron.Recover so a
// panic is logged and the rest still go out. A failed delivery is logged, not retried: a
// reminder claimed with its outbox row (ReminderClaimer) is delivered at the next start.
func (s *Scheduler) deliver(ctx context.Context, sessionID string, b *sessionBatch) {
	guard := cron.Recover(s.cronLg)
	s.deliveries.Go(func() {
		if len(b.missed) > 0 {
			guard(cron.FuncJob(func() {
				if err := s.d.ReportMissed(ctx, sessionID, b.missed); err != nil {
					s.log.Error("reporting missed nudges", "session", sessionID, "count", len(b.missed), "err", err)
				}
			})).Run()
		}
		for _, f := range b.fired {
			guard(cron.FuncJob(func() {
				if err := s.d.Nudge(ctx, f.n, f.scheduledAt); err != nil {
					s.log.Error("delivering a nudge", "id", f.n.ID, "session", sessionID, "scheduled", f.scheduledAt, "err", err)
				}
			})).Run()
		}
	})
}
