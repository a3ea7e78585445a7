// Package nudges fires the nudge schedules that the engine keeps in the store: reminders
// while a plan or a question waits, and the approval timeout (docs/design.md §7).
//
// The store is the authority: every occurrence is claimed in its firing ledger
// (Store.FireNudge) before it is handed to the engine, so it is delivered at most once
// even when the process dies or two processes share the database. The scheduler keeps
// only a compact queue of due times, loaded at start-up and refreshed per session when
// the engine says a session's schedules changed.
//
// Timing runs on github.com/robfig/cron/v3, but not one entry per schedule: cron re-sorts
// its entries at every wake-up, never tells a job which occurrence it runs, and counts
// @every from when an entry was added. The scheduler keeps a min-heap of due times and
// gives cron one one-shot entry for the earliest, which runs a dispatch round through
// cron's chain (Recover, DelayIfStillRunning). Recurring specs are parsed as Specs parses
// them, and their next times computed from the stored occurrence.
package nudges

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/plangate/plangate/core"
)

// Outcomes recorded in the firing ledger; they match the store's values.
const (
	OutcomeFired  = "fired"
	OutcomeMissed = "missed"
)

// DefaultGrace is how late an occurrence may be and still fire when Config.Grace is zero
// (plan_mode.nudge_grace).
const DefaultGrace = 15 * time.Minute

// retryDelay is how long the scheduler waits before trying an occurrence again after the
// store failed to record it. The occurrence keeps its time, so a long outage still ends
// with it recorded as missed rather than delivered hours late.
const retryDelay = 10 * time.Second

// Store is what the scheduler needs from persistence; *store.Store satisfies it.
type Store interface {
	// ActiveNudges lists every active schedule with a next fire time.
	ActiveNudges(ctx context.Context) ([]core.Nudge, error)
	// Nudges lists every schedule of a session, whatever its status.
	Nudges(ctx context.Context, sessionID string) ([]core.Nudge, error)
	// FireNudge records occurrence scheduledAt of schedule id in the ledger with outcome
	// (OutcomeFired or OutcomeMissed) and advances the schedule to next (zero: done), in
	// one transaction. False means the occurrence is not ours to fire: the schedule was
	// cancelled or advanced meanwhile, or the occurrence is already recorded.
	FireNudge(ctx context.Context, id int64, scheduledAt time.Time, outcome string, firedAt, next time.Time) (bool, error)
}

// ReminderClaimer claims a reminder's occurrence in one transaction with the reminder
// itself (its reply goes into the outbox), so a fired reminder is delivered at least once
// even when the process dies before handing it on; *engine.Engine satisfies it. Without
// it occurrences are claimed with Store.FireNudge.
type ReminderClaimer interface {
	ClaimReminder(ctx context.Context, n core.Nudge, scheduledAt, firedAt, next time.Time) (bool, error)
}

// Deliverer hands occurrences to the engine; *engine.Engine satisfies it.
type Deliverer interface {
	Nudge(ctx context.Context, n core.Nudge, scheduledAt time.Time) error
	ReportMissed(ctx context.Context, sessionID string, missed []core.MissedNudge) error
}

// Config tunes the scheduler.
type Config struct {
	// Grace is how late an occurrence may fire, e.g. after downtime
	// (plan_mode.nudge_grace); later ones are recorded as missed and reported. Zero means
	// DefaultGrace. Approval timeouts (core.NudgeExpire) always fire: the deadline passed,
	// and expiring the plan is a state change, not a message that could be stale.
	Grace time.Duration
	// Now tells the time; nil means time.Now. Wake-ups are timed by cron on the real
	// clock, so a replacement must move with it; tests use testing/synctest instead.
	Now func() time.Time
	// Channels are the chat channels this process serves (e.g. "telegram"); only
	// schedules of sessions on them are claimed, so a reminder is never claimed by a
	// process that cannot deliver it. nil = every channel.
	Channels []string
}

// Scheduler fires nudge schedules. Create it with New, start it with Run; SessionChanged
// may be called at any time, before, during or after Run.
type Scheduler struct {
	st     Store
	d      Deliverer
	grace  time.Duration
	now    func() time.Time
	log    *slog.Logger
	cronLg cron.Logger
	parser cron.Parser
	// dispatch is wrapped once, so DelayIfStillRunning's lock is shared by every wake-up.
	dispatch cron.Job

	mu    sync.Mutex
	queue dueQueue
	byID  map[int64]*item
	specs map[string]cron.Schedule // parsed recurring specs, shared by every row using one; nil = invalid

	c       *cron.Cron
	runCtx  context.Context // Run's context: dispatch rounds and deliveries use it
	running bool
	wake    cron.EntryID // the one cron entry, 0 when none
	wakeAt  time.Time    // when it fires; zero when no wake-up is pending

	deliveries sync.WaitGroup
	served     map[string]bool // channels served; nil = all
}

// serves reports whether this process serves the channel of a session ("telegram:..").
func (s *Scheduler) serves(sessionID string) bool {
	if s.served == nil {
		return true
	}
	ch, _, _ := strings.Cut(sessionID, ":")
	return s.served[ch]
}

// New returns a scheduler; it does no I/O. log may be nil.
func New(st Store, d Deliverer, cfg Config, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Scheduler{
		st: st, d: d, grace: cfg.Grace, now: cfg.Now, log: log, cronLg: cronLogger{log},
		parser: newParser(), byID: map[int64]*item{}, specs: map[string]cron.Schedule{},
	}
	if cfg.Channels != nil {
		s.served = map[string]bool{}
		for _, c := range cfg.Channels {
			s.served[c] = true
		}
	}
	s.dispatch = cron.NewChain(cron.DelayIfStillRunning(s.cronLg)).Then(cron.FuncJob(s.dispatchDue))
	return s
}

// Run loads every active schedule and fires them until ctx ends. Occurrences that fell due
// while plangate was down fire at once if late by less than the grace period, are
// recorded as missed otherwise, and every session is told once what it missed; a
// recurring schedule catches up with its latest occurrence only. On return no dispatch
// round or delivery runs. Run returns nil when ctx ends and an error when the schedules
// cannot be loaded; it runs once per Scheduler.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.c != nil {
		s.mu.Unlock()
		return errors.New("running the nudge scheduler: it already ran")
	}
	c := cron.New(cron.WithChain(cron.Recover(s.cronLg)), cron.WithLogger(s.cronLg))
	s.c, s.runCtx = c, ctx
	s.mu.Unlock()

	n, err := s.load(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: not a failure
		}
		return err
	}
	s.log.Info("nudge scheduler started", "schedules", n, "grace", s.grace.String())

	s.mu.Lock()
	s.running = true
	c.Start()
	s.armLocked()
	s.mu.Unlock()

	<-ctx.Done()
	s.mu.Lock()
	s.running = false // no new wake-ups from here on
	s.mu.Unlock()
	<-c.Stop().Done() // waits for a dispatch round in progress
	s.deliveries.Wait()
	s.log.Info("nudge scheduler stopped")
	return nil
}

// load reads every active schedule into the queue and returns how many it holds.
func (s *Scheduler) load(ctx context.Context) (int, error) {
	rows, err := s.st.ActiveNudges(ctx)
	if err != nil {
		return 0, fmt.Errorf("loading nudge schedules: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := interner{}
	s.queue.grow(len(rows))
	for _, n := range rows {
		if _, ok := s.byID[n.ID]; ok {
			continue // SessionChanged got there first
		}
		s.addLocked(n, in)
	}
	return len(s.byID), nil
}

// SessionChanged re-reads the schedules of one session: new active ones are queued, ones
// cancelled or finished are dropped. It implements engine.Nudger; errors are logged, and a
// schedule it misses still cannot fire wrongly: every occurrence is claimed in the store.
func (s *Scheduler) SessionChanged(ctx context.Context, sessionID string) {
	if sessionID == "" {
		return // the store would list every session's schedules
	}
	rows, err := s.st.Nudges(ctx, sessionID)
	if err != nil {
		s.log.Error("reloading nudge schedules", "session", sessionID, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := interner{}
	for _, n := range rows {
		it := s.byID[n.ID]
		live := n.Status == core.NudgeActive && !n.NextFireAt.IsZero()
		switch {
		case it == nil && live:
			s.addLocked(n, in)
		case it != nil && !live:
			s.dropLocked(it)
		case it != nil && it.index >= 0 && n.NextFireAt.After(it.n.NextFireAt):
			// Another process fired it and moved it on.
			it.n.NextFireAt, it.at = n.NextFireAt, n.NextFireAt
			s.queue.fix(it)
		}
	}
	s.armLocked()
}

// addLocked queues a stored schedule.
func (s *Scheduler) addLocked(n core.Nudge, in interner) {
	if !s.serves(n.SessionID) {
		return // another process serves its channel and claims it
	}
	if !normalize(&n) {
		s.log.Error("skipping a nudge schedule with an unknown kind or action", "id", n.ID, "kind", n.Kind, "action", n.Action)
		return
	}
	n.SessionID, n.PlanID, n.Spec = in.get(n.SessionID), in.get(n.PlanID), in.get(n.Spec)
	n.NextFireAt = n.NextFireAt.UTC()
	it := &item{n: n, at: n.NextFireAt, index: -1}
	if n.Kind == core.NudgeRecurring {
		it.sched = s.schedule(n)
	}
	s.byID[n.ID] = it
	s.queue.push(it)
}

// dropLocked forgets a schedule; if a dispatch round holds it, the round lets it go.
func (s *Scheduler) dropLocked(it *item) {
	if it.index >= 0 {
		s.queue.remove(it)
	}
	it.dropped = true
	delete(s.byID, it.n.ID)
}

// schedule returns the parsed spec of a recurring schedule, parsing each spec once. An
// invalid spec (only a hand-edited row has one) fires like a one-shot: the person still
// gets the reminder, and the row ends.
func (s *Scheduler) schedule(n core.Nudge) cron.Schedule {
	sched, ok := s.specs[n.Spec]
	if !ok {
		var err error
		sched, err = s.parser.Parse(n.Spec)
		if err != nil {
			s.log.Error("nudge schedule has an invalid spec; it fires once", "id", n.ID, "spec", n.Spec, "err", err)
			sched = nil
		}
		s.specs[n.Spec] = sched
	}
	return sched
}

// armLocked makes sure cron wakes up when the earliest queued schedule is due. A pending
// wake-up that comes no later is kept; one that would come too late is replaced.
func (s *Scheduler) armLocked() {
	if !s.running {
		return
	}
	head := s.queue.peek()
	if head == nil || (!s.wakeAt.IsZero() && !head.at.Before(s.wakeAt)) {
		return
	}
	if s.wake != 0 {
		s.c.Remove(s.wake)
	}
	s.wake = s.c.Schedule(&oneShot{at: head.at}, s.dispatch)
	s.wakeAt = head.at
}

// oneShot is a cron.Schedule that fires once: cron asks for the next time when the entry
// is added and again after it ran, and the second answer, the zero time, means never.
type oneShot struct {
	at   time.Time
	used bool // only cron's run goroutine calls Next
}

func (o *oneShot) Next(time.Time) time.Time {
	if o.used {
		return time.Time{}
	}
	o.used = true
	return o.at
}

// cronLogger sends cron's logs to slog: its chatter at debug level, errors (recovered
// panics included, with their stack) at error level.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}

// interner shares equal strings among the schedules loaded together (a session's id, a
// plan's id, a spec), so 100,000 schedules do not hold 100,000 copies of a few values.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	in[s] = s
	return s
}

// normalize swaps the enum strings read from the store for the package constants (which
// need no memory of their own) and reports whether they are known values.
func normalize(n *core.Nudge) bool {
	switch n.Kind {
	case core.NudgeOnce:
		n.Kind = core.NudgeOnce
	case core.NudgeRecurring:
		n.Kind = core.NudgeRecurring
	default:
		return false
	}
	switch n.Action {
	case core.NudgeRemind:
		n.Action = core.NudgeRemind
	case core.NudgeExpire:
		n.Action = core.NudgeExpire
	default:
		return false
	}
	n.Status = core.NudgeActive
	return true
}
