package telegram

import (
	"context"
	"errors"
	"fmt"
)

// settle reports the handler's outcome for an update and whether the update is handled.
// One the handler gave up on because plangate is stopping (a context error once Run's
// context has ended: the turn never started, or was interrupted before it committed) is
// not: it stays in the inbox, so the next start replays it, and the engine de-duplicates
// it there if it had committed after all.
func (d *dispatcher) settle(ctx context.Context, j job, id int64, err error) bool {
	if ctx.Err() != nil && stopped(err) {
		d.left.Add(1)
		d.c.log.Warn("telegram update not handled before the stop; it is kept for the next start",
			"update", id, "chat", j.msg.Address.Chat, "err", err)
		if j.toast != nil {
			j.toast.finish()
		}
		return false
	}
	d.c.handled(j, err)
	return true
}

// stopped tells a handler that was stopped from one that failed.
func stopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Drain waits, until ctx ends, for the updates Run handed to the engine to be settled
// (they outlive Run, so that a shutdown lets turns in flight finish), and returns how many
// were left unhandled in the inbox for the next start. Call it after Run has returned and
// the engine has stopped, before the store closes.
func (c *Channel) Drain(ctx context.Context) (int, error) {
	d := c.disp.Load()
	if d == nil {
		return 0, nil
	}
	settled := make(chan struct{})
	go func() {
		d.inflight.Wait()
		close(settled)
	}()
	select {
	case <-settled:
	case <-ctx.Done():
		return int(d.left.Load()), fmt.Errorf("waiting for telegram updates to settle: %w", ctx.Err())
	}
	if err := d.in.flush(context.WithoutCancel(ctx)); err != nil {
		return int(d.left.Load()), err
	}
	return int(d.left.Load()), nil
}
