package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/plangate/plangate/core"
)

// DeliverLeft delivers the replies another process committed and never sent (it died
// between the commit and the send), for replicas that outlive it; at start-up Unsent and
// Backlog.Deliver do this. Each session's rows are delivered by a job in the session's
// queue: a reply this process commits is delivered by the job that committed it, before
// the session's next job starts, so the rows still unsent when this job runs are not
// this process's in-flight ones. Sessions whose lease another live process holds are
// left until it is free (retryWhenFree). It returns how many replies went out.
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
		dones = append(dones, e.systemAsync(ctx, sid, func(ctx context.Context, _ *jobRun) error {
			left, err := e.Unsent(ctx, channels, maxAge, func(id string) bool { return id == sid })
			if err != nil {
				return err
			}
			if holder, held := e.holderElsewhere(ctx, sid); held {
				e.retryWhenFree(left.rows, holder)
				return nil
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

// retryWhenFree hands the rows a gone process left in a session whose lease holder, a
// live process, is another to the retry loop (RetryUnsent), which sends them once the
// lease is free, claiming each first. The holder sends only its own rows, so without this
// such a reply would wait for some replica's next start, or be dropped at
// outbox_max_age. The holder's own rows, and rows of no known owner (from before owners
// were recorded), stay its: it may be sending them now.
func (e *Engine) retryWhenFree(rows []core.Outgoing, holder string) {
	now := e.d.Now()
	for _, o := range rows {
		if o.Owner != "" && o.Owner != holder && o.Owner != e.owner {
			e.sending.retryLater(o.ID, now)
		}
	}
}
