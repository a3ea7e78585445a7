// Package backoff is the one schedule of waits between attempts in plangate: a first wait
// that doubles after each failure up to a bound, cenkalti/backoff's ExponentialBackOff.
// Without jitter the waits are exact, which tests with an injected clock rely on; with it
// (Jittered) many callers failing at once do not retry in step.
package backoff

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Backoff hands out the waits: NextBackOff for the next one, Reset after a success.
type Backoff = backoff.ExponentialBackOff

// New returns waits of first, then twice as long after each, at most limit (never below
// first).
func New(first, limit time.Duration) *Backoff {
	return &Backoff{InitialInterval: first, Multiplier: 2, MaxInterval: max(limit, first)}
}

// Jittered is New with each wait drawn from half to one and a half times its step.
func Jittered(first, limit time.Duration) *Backoff {
	b := New(first, limit)
	b.RandomizationFactor = 0.5
	return b
}

// Sleep waits d or until ctx ends, whichever is first; it returns ctx.Err() in the second
// case. A d of zero or less returns at once, without a timer.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
