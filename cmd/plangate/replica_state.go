package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/slack"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// Inboxes on several replicas. An adapter keeps the events it acknowledged to the platform
// but has not handled yet in one channel-state record (its inbox). Where every replica
// receives events of its own — Telegram webhooks, Slack Socket Mode and the Events API —
// one shared record would be overwritten by each replica's saves, and the events a killed
// replica had acknowledged would be gone. So on PostgreSQL each replica keeps its inbox
// under its own key, "<key>@<replica>", and holds the lease "replica:<replica>" while it
// runs. A replica that starts adopts the inbox of a replica that is gone (its lease
// expired, or its process ended on this host) by renaming that record to its own key
// before its channels start: the adapter then replays it as it replays its own after a
// restart, and the engine's inbound keys drop what had been handled already. One record
// is adopted per channel account and start, so the record of a killed replica is picked
// up when a replica (typically its restarted self) next starts.
//
// Polling and the Discord gateway run on the elected replica only (election.go); their
// inbox stays shared, and the next leader replays it.

// replicaLease is the lease a running replica holds.
func replicaLease(owner string) string { return "replica:" + owner }

// replicaInboxes names the inbox keys of the enabled channels that receive on every
// replica: channel -> key.
func replicaInboxes(cfg *Config) map[string]string {
	out := map[string]string{}
	if ch := cfg.Channels.Telegram; ch.Enabled && ch.Mode == telegram.ModeWebhook {
		out[telegram.Name] = "updates" // channels/telegram inbox.go
	}
	if cfg.Channels.Slack.Enabled {
		out[slack.Name] = "inbox" // channels/inbox.go
	}
	return out
}

// replicaState is the channel state an adapter sees: its inbox key carries this
// replica's name, every other key is shared.
type replicaState struct {
	st    channels.State
	inbox string // the key to scope, "" = none
	owner string
}

func (r replicaState) key(k string) string {
	if r.inbox != "" && k == r.inbox {
		return k + "@" + r.owner
	}
	return k
}

func (r replicaState) ChannelState(ctx context.Context, channel, account, key string) (string, bool, error) {
	return r.st.ChannelState(ctx, channel, account, r.key(key))
}

func (r replicaState) SetChannelState(ctx context.Context, channel, account, key, value string) error {
	return r.st.SetChannelState(ctx, channel, account, r.key(key), value)
}

// stateFor is the state the adapter of channel gets: scoped on PostgreSQL when the
// channel receives on every replica.
func stateFor(cfg *Config, st *store.Store, channel string) channels.State {
	if !cfg.Store.postgres() {
		return st
	}
	key := replicaInboxes(cfg)[channel]
	if key == "" {
		return st
	}
	return replicaState{st: st, inbox: key, owner: core.ProcessOwner()}
}

// adoptInboxes renames one orphaned inbox per channel account to this replica's key: a
// record of a replica that is gone, or the shared record a single process left (before
// the deployment moved to several replicas). It runs after this replica holds its own
// lease and before its channels start.
func adoptInboxes(ctx context.Context, cfg *Config, st *store.Store, owner string, now time.Time, log *slog.Logger) error {
	for channel, key := range replicaInboxes(cfg) {
		keys, err := st.ChannelStateKeys(ctx, channel, key)
		if err != nil {
			return err
		}
		adopted := map[string]bool{}
		for _, k := range keys {
			holder, scoped := strings.CutPrefix(k.Key, key+"@")
			if k.Key != key && !scoped || adopted[k.Account] || holder == owner {
				continue
			}
			if scoped && !replicaGone(ctx, st, holder, now) {
				continue
			}
			ok, err := st.MoveChannelState(ctx, channel, k.Account, k.Key, key+"@"+owner)
			if err != nil {
				return err
			}
			if ok {
				adopted[k.Account] = true
				log.Info("adopted the inbox of a replica that is gone", "channel", channel, "record", k.Key)
			}
		}
	}
	return nil
}

// replicaGone reports whether the replica named owner no longer runs: its lease is gone
// or expired, or it was a process of this host that has ended.
func replicaGone(ctx context.Context, st *store.Store, owner string, now time.Time) bool {
	if core.OwnerGone(owner) {
		return true
	}
	l, err := st.Lease(ctx, replicaLease(owner))
	if errors.Is(err, core.ErrNotFound) {
		return true
	}
	return err == nil && !l.ExpiresAt.After(now)
}

// startReplica takes this replica's lease and adopts the inboxes of replicas that are
// gone, on PostgreSQL; stop releases the lease once the channels have stopped.
func startReplica(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger) (stop func(), err error) {
	if !cfg.Store.postgres() {
		return func() {}, nil
	}
	owner := core.ProcessOwner()
	el := &store.Elector{Name: replicaLease(owner), Owner: owner, St: st, Now: now, Log: log}
	if _, err := el.Step(ctx); err != nil {
		return nil, err
	}
	if err := adoptInboxes(ctx, cfg, st, owner, now(), log); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { el.Run(rctx); close(done) }()
	return func() { cancel(); <-done }, nil
}
