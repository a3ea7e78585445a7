package channels

import (
	"sync"
	"time"
)

// Later runs a function once after a delay, however often it is asked to meanwhile: the
// inboxes coalesce the saves of finished events with it. A request due sooner than the
// scheduled run brings it forward (an update whose replay would be visible asks for its
// save sooner); one due later joins it. The zero value is ready to use.
type Later struct {
	mu    sync.Mutex
	timer *time.Timer // the scheduled run; nil when none is
	due   time.Time
	gen   int // which timer is the scheduled one
}

// After schedules fn to run after delay unless a run is already scheduled by then; a run
// scheduled for later is moved to delay from now, keeping its own fn (the callers of one
// Later ask for the same work).
func (l *Later) After(delay time.Duration, fn func()) {
	due := time.Now().Add(delay)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		if !due.Before(l.due) {
			return
		}
		if l.timer.Stop() {
			l.due = due
			l.timer.Reset(delay)
			return
		}
		// Stop lost the race with the run, which is starting: schedule another.
	}
	l.gen++
	gen := l.gen
	l.due = due
	l.timer = time.AfterFunc(delay, func() {
		l.mu.Lock()
		if l.gen == gen {
			l.timer = nil
		}
		l.mu.Unlock()
		fn()
	})
}
