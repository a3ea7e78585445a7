package adminapi

import "time"

// waitTimer is a stoppable timeout channel.
type waitTimer struct {
	t *time.Timer
	c <-chan time.Time
}

func timer(d time.Duration) waitTimer {
	t := time.NewTimer(d)
	return waitTimer{t: t, c: t.C}
}

func (w waitTimer) stop() { w.t.Stop() }
