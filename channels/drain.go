package channels

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Drainer is implemented by channels whose received events outlive Run, so that a shutdown
// lets the turns in flight finish. Drain waits, until ctx ends, for every event handed to
// the Handler to be settled, saves the inbox, and reports how many events were left
// unhandled (the handler stopped before it committed them) for the next start. Call it
// after Run has returned and the handler has stopped, before the store closes.
type Drainer interface {
	Drain(ctx context.Context) (left int, err error)
}

// Stopped tells a handler that was stopped (its context ended) from one that failed: a
// stopped job did not commit, so its event stays for the next start.
func Stopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Settle is the body of a Drain: it waits until inflight is done or ctx ends, saves the
// inbox with flush and reports left. what names the events for the error ("telegram updates").
func Settle(ctx context.Context, inflight *sync.WaitGroup, left *atomic.Int64, flush func(context.Context) error, what string) (int, error) {
	settled := make(chan struct{})
	go func() {
		inflight.Wait()
		close(settled)
	}()
	select {
	case <-settled:
	case <-ctx.Done():
		return int(left.Load()), fmt.Errorf("waiting for %s to settle: %w", what, ctx.Err())
	}
	err := flush(context.WithoutCancel(ctx))
	return int(left.Load()), err
}
