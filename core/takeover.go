package core

import (
	"context"
	"sync/atomic"
	"time"
)

// DeliverLeft delivers the replies another process committed and never sent (it died
// between the commit and the send), for replicas that outlive it; at start-up Unsent and
// Backlog.Deliver do this. Each session's rows are delivered by a job in the session's
// queue: a reply this process commits is delivered by the job that committed it, before
// the session's next job starts, so the rows still unsent when this job runs are not
// this process's in-flight ones. Sessions whose lease another live process holds are
// left to it. It returns how many replies went out.
func (e *Engine) DeliverLeft(ctx context.Context, channels []string, maxAge time.Duration) (int, error) {
	b, err := e.Unsent(ctx, channels, maxAge, nil)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var dones []<-chan error
	var sent atomic.Int64
	for _, o := range b.rows {
		sid := o.SessionID
		if seen[sid] {
			continue
		}
		seen[sid] = true
		dones = append(dones, e.systemAsync(ctx, sid, func(ctx context.Context, _ *turnState) error {
			if e.heldElsewhere(ctx, sid) {
				return nil
			}
			left, err := e.Unsent(ctx, channels, maxAge, func(id string) bool { return id == sid })
			if err != nil {
				return err
			}
			for i := range left.rows {
				if _, err := e.deliverLeft(ctx, &left.rows[i]); err == nil {
					sent.Add(1)
				}
			}
			return nil
		}))
	}
	for _, done := range dones {
		if err := waitJob(ctx, done); err != nil && ctx.Err() == nil {
			e.d.Log.Warn("delivering replies left unsent", "err", err)
		}
	}
	return int(sent.Load()), nil
}
