package telegram

import (
	"context"

	"github.com/plangate/plangate/channels"
)

// settle reports the handler's outcome for an update and whether the update is handled.
// One the handler gave up on because plangate is stopping (a context error once Run's
// context has ended: the turn never started, or was interrupted before it committed) is
// not: it stays in the inbox, so the next start replays it, and the engine de-duplicates
// it there if it had committed after all.
func (d *dispatcher) settle(ctx context.Context, j job, id int64, err error) bool {
	if ctx.Err() != nil && channels.Stopped(err) {
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

// Drain waits, until ctx ends, for the updates Run handed to the engine to be settled
// (they outlive Run, so that a shutdown lets turns in flight finish), and returns how many
// were left unhandled in the inbox for the next start. Call it after Run has returned and
// the engine has stopped, before the store closes.
func (c *Channel) Drain(ctx context.Context) (int, error) {
	d := c.disp.Load()
	if d == nil {
		return 0, nil
	}
	return channels.Settle(ctx, &d.inflight, &d.left, d.in.flush, "telegram updates")
}
