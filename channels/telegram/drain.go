package telegram

import (
	"context"

	"github.com/plangate/plangate/channels"
)

// settle reports the handler's outcome for an update and whether the update is handled.
// One the handler gave up on because plangate is stopping (a context error once Run's
// context has ended) is not: it stays in the inbox for the next start, where the engine
// de-duplicates it if it had committed after all.
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

// Drain implements channels.Drainer for the updates Run handed to the engine.
func (c *Channel) Drain(ctx context.Context) (int, error) {
	d := c.disp.Load()
	if d == nil {
		return 0, nil
	}
	return channels.Settle(ctx, &d.inflight, &d.left, d.in.flush, "telegram updates")
}
