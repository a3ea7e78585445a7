package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// takeOverEvery is how often a replica looks for session leases a dead replica left. With
// the lease ttl (30 s) it bounds how long a killed replica's running turn waits for
// another replica: at once plus this when the holder was a process of this host, else
// the ttl plus this.
const takeOverEvery = 10 * time.Second

// takeover is what a replica does, every takeOverEvery, with the work of replicas that
// died while it runs. Only on PostgreSQL: a SQLite file has one process.
type takeover struct {
	eng    takeoverEngine
	st     *store.Store
	served []string
	maxAge time.Duration // channels.outbox_max_age
	now    func() time.Time
	log    *slog.Logger
	me     string // this replica (engine.ProcessOwner)
	// The channels that keep an inbox per replica (replicaInboxes: channel -> key), and
	// their running adapters that can adopt another replica's.
	inboxes  map[string]string
	adopters map[string]channels.InboxAdopter
}

// takeoverEngine is what takeover asks of the engine (*engine.Engine).
type takeoverEngine interface {
	DeliverLeft(ctx context.Context, channels []string, maxAge time.Duration) (int, error)
	StartResume(ctx context.Context, only func(core.Session) bool) (wait func() int, err error)
}

// newTakeover is serve's takeover over its running channels.
func newTakeover(cfg *Config, g *gateway, st *store.Store, chans []channels.Channel, now func() time.Time, log *slog.Logger) *takeover {
	tk := &takeover{eng: g.eng, st: st, served: g.served, maxAge: cfg.Channels.OutboxMaxAge, now: now, log: log,
		me: engine.ProcessOwner(), inboxes: replicaInboxes(cfg), adopters: map[string]channels.InboxAdopter{}}
	for _, c := range chans {
		if a, ok := c.(channels.InboxAdopter); ok && tk.inboxes[c.Name()] != "" {
			tk.adopters[c.Name()] = a
		}
	}
	return tk
}

// run calls once at every tick until ctx (receiving) ends; the work it starts runs under
// work, which outlives receiving as a start-up's resumed turns do.
func (tk *takeover) run(ctx, work context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		tk.once(work)
	}
}

// once resumes the sessions whose lease a replica left when it died mid-turn (lease
// expired, or its process on this host ended): the start-up's Resume, so the turn
// continues here and the chat is told it restarted. A dead replica (replica_state.go) it
// claims, one survivor winning, and does what that replica's next start would: deliver
// its unsent replies, resume every session (a stored message without a turn is
// answered), adopt its inbox records. Records left without a lease are claimed and
// adopted too. A session another replica is about to answer may be answered twice in
// that moment (delivery is at least once).
func (tk *takeover) once(ctx context.Context) {
	now := tk.now()
	ids := leftSessions(ctx, tk.st, now, tk.log)
	dead := claimDeadReplicas(ctx, tk.st, tk.me, now, tk.log)
	claimed := append(slices.Clone(dead), tk.claimOrphans(ctx, now)...)
	if len(ids) == 0 && len(claimed) == 0 {
		return
	}
	if len(dead) > 0 {
		// What it committed and never sent, before the resumed turns answer anew.
		if n, err := tk.eng.DeliverLeft(ctx, tk.served, tk.maxAge); err != nil && ctx.Err() == nil {
			tk.log.Warn("delivering replies a replica that is gone left unsent", "err", err)
		} else if n > 0 {
			tk.log.Info("delivered replies a replica that is gone left unsent", "count", n)
		}
	}
	wait := func() int { return 0 }
	if len(ids) > 0 || len(dead) > 0 {
		var err error
		// As at a start: the resumed turns are queued before the adopted events.
		wait, err = tk.eng.StartResume(ctx, func(s core.Session) bool {
			// After a replica died, every session: it may have stored a message it
			// never started a turn for (no lease to find).
			return (len(dead) > 0 || slices.Contains(ids, s.ID)) && slices.Contains(tk.served, s.Address.Channel)
		})
		if err != nil && ctx.Err() == nil {
			tk.log.Warn("taking over work of a replica that is gone", "err", err)
		}
		if wait == nil {
			wait = func() int { return 0 }
		}
	}
	for _, holder := range claimed {
		tk.adopt(ctx, holder)
		releaseClaim(ctx, tk.st, holder, tk.me, tk.log)
	}
	if n := wait(); n > 0 {
		tk.log.Info("took over work of a replica that is gone", "sessions", n)
	}
}

// claimOrphans claims the replicas whose inbox records are left without a lease (one
// that stopped with events left in its inbox, or a claimer that died before it deleted
// what it adopted) and returns them.
func (tk *takeover) claimOrphans(ctx context.Context, now time.Time) []string {
	recs, err := inboxRecords(ctx, tk.st, tk.inboxes)
	if err != nil {
		warnLive(ctx, tk.log, err, "listing replica inboxes")
		return nil
	}
	var out []string
	for _, r := range recs {
		if r.holder == "" || r.holder == tk.me || slices.Contains(out, r.holder) || tk.adopters[r.channel] == nil {
			continue
		}
		if _, err := tk.st.Lease(ctx, engine.ReplicaLease(r.holder), now); !errors.Is(err, core.ErrNotFound) {
			continue // a replica with a lease: live, or claimDeadReplicas' to find
		}
		if ok, err := claimReplica(ctx, tk.st, r.holder, tk.me, now); err == nil && ok {
			out = append(out, r.holder)
		}
	}
	return out
}

// adopt hands the inbox records of the dead replica holder to this replica's running
// adapters, and deletes each once its events are saved in the adapter's own inbox. A
// record the adapter cannot take now (not receiving, the store failing) stays, and is
// claimed again at the next tick.
func (tk *takeover) adopt(ctx context.Context, holder string) {
	recs, err := inboxRecords(ctx, tk.st, tk.inboxes)
	if err != nil {
		warnLive(ctx, tk.log, err, "listing replica inboxes")
		return
	}
	for _, r := range recs {
		a := tk.adopters[r.channel]
		if r.holder != holder || a == nil || a.InboxAccount() != r.account {
			continue
		}
		saved, ok, err := tk.st.ChannelState(ctx, r.channel, r.account, r.key)
		if err != nil || !ok {
			continue
		}
		n, err := a.AdoptInbox(ctx, saved)
		if err != nil {
			warnLive(ctx, tk.log, err, "adopting the inbox of a replica that is gone; trying again later", "channel", r.channel, "record", r.key)
			continue
		}
		// Only as adopted: a replica thought dead that saved its record again meanwhile
		// keeps it (adopted again later if it is gone: replayed twice, which the inbound
		// keys make harmless).
		if _, err := tk.st.DeleteChannelState(context.WithoutCancel(ctx), r.channel, r.account, r.key, saved); err != nil {
			tk.log.Warn("deleting an adopted inbox", "channel", r.channel, "record", r.key, "err", err)
		}
		tk.log.Info("adopted the inbox of a replica that is gone", "channel", r.channel, "record", r.key, "events", n)
	}
}

// leftSessions lists the sessions whose lease a dead holder left: ended by the store's
// clock (the leases' ends come on this replica's clock, now), or held by a process of
// this host that has ended.
func leftSessions(ctx context.Context, st *store.Store, now time.Time, log *slog.Logger) []string {
	ls, err := st.Leases(ctx, "session:", now)
	if err != nil {
		warnLive(ctx, log, err, "listing session leases")
		return nil
	}
	var ids []string
	for _, l := range ls {
		if !l.ExpiresAt.After(now) || engine.OwnerGone(l.Owner) {
			ids = append(ids, strings.TrimPrefix(l.Name, "session:"))
		}
	}
	return ids
}

// claimDeadReplicas claims the leases of replicas that are gone (expired by the store's
// clock, or a process of this host that has ended) and returns the replicas this replica
// claimed: of several survivors, the one whose claim wins takes over the dead replica's
// work, and releases the claim when it is done (releaseClaim).
func claimDeadReplicas(ctx context.Context, st *store.Store, me string, now time.Time, log *slog.Logger) []string {
	ls, err := st.Leases(ctx, engine.ReplicaLease(""), now)
	if err != nil {
		warnLive(ctx, log, err, "listing replica leases")
		return nil
	}
	var out []string
	for _, l := range ls {
		holder := strings.TrimPrefix(l.Name, engine.ReplicaLease(""))
		if holder == me || l.Owner == me || (l.ExpiresAt.After(now) && !engine.OwnerGone(l.Owner)) {
			continue
		}
		if ok, err := claimReplica(ctx, st, holder, me, now); err != nil || !ok {
			continue
		}
		log.Info("a replica is gone: resuming its work", "replica", holder)
		out = append(out, holder)
	}
	return out
}

// warnLive logs err with msg and args unless ctx has ended: then it is the stop's doing.
func warnLive(ctx context.Context, log *slog.Logger, err error, msg string, args ...any) {
	if ctx.Err() == nil {
		log.Warn(msg, append(args, "err", err)...)
	}
}
