package slack

import (
	"cmp"
	"context"
	"time"
)

// nameLookupTime bounds one users.info call, which may go on after the message that
// asked for it has moved on without the name.
const nameLookupTime = 5 * time.Second

// nameOf is a person's display name for replies ("accepted by alice"), asked of users.info
// once and remembered. The message waits at most nameWait; a slower answer serves the
// person's next message, and hint (a user name some payloads carry) or the id stands in.
// Approvers are matched on the id, never the name.
func (c *Channel) nameOf(ctx context.Context, id, hint string) string {
	c.namesMu.Lock()
	if n, ok := c.names[id]; ok && time.Now().Before(n.until) {
		c.namesMu.Unlock()
		return n.name
	}
	wait, running := c.lookups[id]
	if !running {
		wait = make(chan struct{})
		c.lookups[id] = wait
		go c.lookupName(context.WithoutCancel(ctx), id, hint, wait)
	}
	c.namesMu.Unlock()
	t := time.NewTimer(c.nameWait)
	defer t.Stop()
	select {
	case <-wait:
		c.namesMu.Lock()
		n, ok := c.names[id]
		c.namesMu.Unlock()
		if ok {
			return n.name
		}
	case <-t.C:
		c.log.Debug("users.info is slow; going on without the name", "user", id)
	case <-ctx.Done():
	}
	return cmp.Or(hint, id)
}

// lookupName asks users.info for a name and remembers the answer (a failure for a
// shorter while), then closes done.
func (c *Channel) lookupName(ctx context.Context, id, hint string, done chan struct{}) {
	name, keep := hint, time.Hour
	actx, cancel := context.WithTimeout(ctx, nameLookupTime)
	u, err := c.api.GetUserInfoContext(actx, id)
	cancel()
	if err != nil {
		c.log.Debug("looking up a user's name", "user", id, "err", c.scrub(err))
		keep = 10 * time.Minute
	} else if n := cmp.Or(u.Profile.DisplayName, u.RealName, u.Name); n != "" {
		name, keep = n, 24*time.Hour
	}
	name = cmp.Or(name, id)
	c.namesMu.Lock()
	if len(c.names) > 4096 {
		clear(c.names)
	}
	c.names[id] = cachedName{name: name, until: time.Now().Add(keep)}
	delete(c.lookups, id)
	c.namesMu.Unlock()
	close(done)
}

type cachedName struct {
	name  string
	until time.Time
}
