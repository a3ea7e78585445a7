package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// takeOverEvery is how often a replica looks for session leases a dead replica left. With
// the lease ttl (30 s) it bounds how long a killed replica's running turn waits for
// another replica: at once plus this when the holder was a process of this host, else
// the ttl plus this.
const takeOverEvery = 10 * time.Second

// takeOver resumes, every takeOverEvery until ctx ends, the sessions whose lease was left
// by a replica that died while running their turn (the lease expired, or its process on
// this host has ended): the same Resume a start-up runs, so the turn continues here and
// the chat is told it restarted. When it finds a replica dead (its replica lease, see
// replica_state.go), one survivor claims that and does what the dead replica's next
// start would: it delivers the replies left unsent and resumes every session, so a
// person's message it stored but never started a turn for is answered. At start-up Resume covers everything; this covers the replicas that die
// while this one runs. A session another replica is about to answer may be answered
// twice in that moment (delivery is at least once). Only on PostgreSQL: a SQLite file
// has one process.
func takeOver(ctx context.Context, eng *core.Engine, st *store.Store, served []string, maxAge time.Duration, now func() time.Time, log *slog.Logger) {
	tick := time.NewTicker(takeOverEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ids := leftSessions(ctx, st, now(), log)
		dead := claimDeadReplicas(ctx, st, core.ProcessOwner(), now(), log)
		if len(ids) == 0 && dead == 0 {
			continue
		}
		if dead > 0 {
			// What it committed and never sent, before the resumed turns answer anew.
			if n, err := eng.DeliverLeft(ctx, served, maxAge); err != nil && ctx.Err() == nil {
				log.Warn("delivering replies a replica that is gone left unsent", "err", err)
			} else if n > 0 {
				log.Info("delivered replies a replica that is gone left unsent", "count", n)
			}
		}
		n, err := eng.Resume(ctx, func(s core.Session) bool {
			// After a replica died, every session: it may have stored a message it
			// never started a turn for (no lease to find).
			return (dead > 0 || slices.Contains(ids, s.ID)) && slices.Contains(served, s.Address.Channel)
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("taking over work of a replica that is gone", "err", err)
		} else if n > 0 {
			log.Info("took over work of a replica that is gone", "sessions", n)
		}
	}
}

// leftSessions lists the sessions whose lease a dead holder left.
func leftSessions(ctx context.Context, st *store.Store, now time.Time, log *slog.Logger) []string {
	// Every lease ends within the ttl, so this lists all session leases.
	ls, err := st.ExpiredLeases(ctx, "session:", now.Add(core.DefaultLeaseTTL+time.Minute))
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("listing session leases", "err", err)
		}
		return nil
	}
	var ids []string
	for _, l := range ls {
		if !l.ExpiresAt.After(now) || core.OwnerGone(l.Owner) {
			ids = append(ids, strings.TrimPrefix(l.Name, "session:"))
		}
	}
	return ids
}

// claimDeadReplicas removes the leases of replicas that are gone (expired, or a process
// of this host that has ended) and reports how many this replica removed: of several
// survivors, the one whose claim wins resumes the dead replica's work.
func claimDeadReplicas(ctx context.Context, st *store.Store, me string, now time.Time, log *slog.Logger) int {
	ls, err := st.ExpiredLeases(ctx, "replica:", now.Add(store.ElectionTTL+time.Minute))
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("listing replica leases", "err", err)
		}
		return 0
	}
	n := 0
	for _, l := range ls {
		if l.Owner == me || (l.ExpiresAt.After(now) && !core.OwnerGone(l.Owner)) {
			continue
		}
		if l.ExpiresAt.After(now) {
			if err := st.ReleaseLease(ctx, l.Name, l.Owner); err != nil {
				continue
			}
		}
		if _, ok, err := st.AcquireLease(ctx, l.Name, me, now, time.Minute); err != nil || !ok {
			continue
		}
		if err := st.ReleaseLease(ctx, l.Name, me); err != nil {
			log.Warn("releasing a dead replica's lease", "lease", l.Name, "err", err)
		}
		log.Info("a replica is gone: resuming its work", "replica", l.Owner)
		n++
	}
	return n
}
