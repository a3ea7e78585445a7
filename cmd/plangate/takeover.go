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
// the chat is told it restarted. At start-up Resume covers everything; this covers the
// replicas that die while this one runs. Only on PostgreSQL: a SQLite file has one
// process.
func takeOver(ctx context.Context, eng *core.Engine, st *store.Store, served []string, now func() time.Time, log *slog.Logger) {
	tick := time.NewTicker(takeOverEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ids := leftSessions(ctx, st, now(), log)
		if len(ids) == 0 {
			continue
		}
		n, err := eng.Resume(ctx, func(s core.Session) bool {
			return slices.Contains(ids, s.ID) && slices.Contains(served, s.Address.Channel)
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
