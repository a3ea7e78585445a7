package channels

import (
	"sync"
	"time"
)

// Later runs a function once after a delay, however often it is asked to meanwhile: the
// inboxes use it to coalesce the saves of events finished close together. The zero value
// is ready to use.
type Later struct {
	mu      sync.Mutex
	pending bool
}

// After schedules fn to run after delay unless a run is already scheduled.
func (l *Later) After(delay time.Duration, fn func()) {
	l.mu.Lock()
	if l.pending {
		l.mu.Unlock()
		return
	}
	l.pending = true
	l.mu.Unlock()
	time.AfterFunc(delay, func() {
		l.mu.Lock()
		l.pending = false
		l.mu.Unlock()
		fn()
	})
}
