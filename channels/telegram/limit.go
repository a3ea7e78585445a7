package telegram

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logEvery is how often one distinct error is logged: a poller meeting the same failure on
// every call must not fill the disk.
const logEvery = time.Minute

// logLimiter lets each distinct line through once per logEvery and counts the rest.
type logLimiter struct {
	now func() time.Time

	mu   sync.Mutex
	last map[string]limited
}

type limited struct {
	at         time.Time
	suppressed int
}

func newLogLimiter(now func() time.Time) *logLimiter {
	return &logLimiter{now: now, last: map[string]limited{}}
}

// allow reports whether the line keyed key may be logged now, and how many like it were
// held back since it last was.
func (l *logLimiter) allow(key string) (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, seen := l.last[key]
	if seen && now.Sub(e.at) < logEvery {
		e.suppressed++
		l.last[key] = e
		return false, 0
	}
	if len(l.last) > 1024 {
		clear(l.last) // distinct errors without end: forget, at worst a line more
	}
	l.last[key] = limited{at: now}
	return true, e.suppressed
}

// logLimited logs msg with err at level, at most once per logEvery for each distinct
// message and error text.
func (c *Channel) logLimited(level slog.Level, msg string, err error, args ...any) {
	key := msg
	if err != nil {
		key += "\x00" + err.Error()
		args = append(args, "err", err)
	}
	ok, suppressed := c.limit.allow(key)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "repeated", suppressed)
	}
	c.log.Log(context.Background(), level, msg, args...)
}
