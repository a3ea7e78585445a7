package coretest

import (
	"sync"
	"time"
)

// Clock is an injected clock that moves only when a test says so, safe to read from the
// goroutines of the code under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time: pass it where the code takes a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
