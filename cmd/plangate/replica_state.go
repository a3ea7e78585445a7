package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// Inboxes on several replicas. An adapter keeps the events it acknowledged to the platform
// but has not handled yet in one channel-state record (its inbox). Where every replica
// receives events of its own (Telegram webhooks, Slack, Discord interactions over HTTP),
// one shared record would be overwritten by each replica's saves, and the events a killed
// replica had acknowledged would be lost. So on PostgreSQL each replica keeps its inbox
// under "<key>@<replica>" and holds the lease "replica:<replica>" while it runs.
//
// The record of a replica that is gone (lease expired, or its process on this host ended)
// is adopted by a live one, so what it acknowledged is answered even if it never returns:
//
//   - a running replica's takeover (takeover.go) claims the dead replica's lease, so one
//     survivor adopts; its adapter (channels.InboxAdopter) merges the pending events into
//     its own inbox, saved durably, and replays them; only then is the dead record
//     deleted. A crash in between adopts the record again, which the inbox keys and the
//     engine's inbound keys make harmless. A record left without a lease (a clean stop
//     with events left, a claimer that died) is claimed and adopted the same way;
//   - a replica that starts renames one such record per channel account to its own key
//     (under the same claim) before its channels start, and replays it as its own; so
//     does the shared record a single process left before the move to several replicas.
//
// Polling and the Discord gateway run on the elected replica only (election.go); their
// inbox stays shared and the next leader replays it. So Discord's interactions inbox is
// per replica with interactions http and shared with interactions gateway.

// replicaInboxes names the inbox keys of the enabled channels that receive on every
// replica: channel -> key.
func replicaInboxes(cfg *Config) map[string]string {
	out := map[string]string{}
	for _, r := range enabledRows(&cfg.Channels) {
		if r.replicaInbox == nil {
			continue
		}
		if key := r.replicaInbox(&cfg.Channels); key != "" {
			out[r.name] = key
		}
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

func (r replicaState) SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error {
	return r.st.SetChannelStateLazy(ctx, channel, account, r.key(key), value)
}

func (r replicaState) SetChannelStateWith(ctx context.Context, channel, account, key string, lazy bool, value func() (string, error)) error {
	return r.st.SetChannelStateWith(ctx, channel, account, r.key(key), lazy, value)
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
	return replicaState{st: st, inbox: key, owner: engine.ProcessOwner()}
}

// adoptInboxes renames one orphaned inbox per channel account to this replica's key: a
// record of a replica that is gone, or the shared record a single process left (before
// the deployment moved to several replicas). It runs after this replica holds its own
// lease and before its channels start; the other orphaned records are adopted by the
// running takeover.
func adoptInboxes(ctx context.Context, cfg *Config, st *store.Store, owner string, now time.Time, log *slog.Logger) error {
	recs, err := inboxRecords(ctx, st, replicaInboxes(cfg))
	if err != nil {
		return err
	}
	adopted := map[string]bool{}
	for _, r := range recs {
		if adopted[r.channel+"\x00"+r.account] || r.holder == owner {
			continue
		}
		if r.holder != "" {
			if ok, err := claimReplica(ctx, st, r.holder, owner, now); err != nil || !ok {
				continue // live, or another replica adopts it
			}
		}
		ok, err := st.MoveChannelState(ctx, r.channel, r.account, r.key, r.base+"@"+owner)
		if r.holder != "" {
			releaseClaim(ctx, st, r.holder, owner, log)
		}
		if err != nil {
			return err
		}
		if ok {
			adopted[r.channel+"\x00"+r.account] = true
			log.Info("adopted the inbox of a replica that is gone", "channel", r.channel, "record", r.key)
		}
	}
	return nil
}

// inboxRecord is one saved inbox of a channel that keeps one per replica.
type inboxRecord struct {
	channel, account, key string
	base                  string // the adapter's own name for it ("updates", "inbox")
	holder                string // the replica it belongs to; "" for the shared record
}

// inboxRecords lists the saved inboxes of the channels in inboxes (channel -> key).
func inboxRecords(ctx context.Context, st *store.Store, inboxes map[string]string) ([]inboxRecord, error) {
	var out []inboxRecord
	for channel, key := range inboxes {
		keys, err := st.ChannelStateKeys(ctx, channel, key)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			holder, scoped := strings.CutPrefix(k.Key, key+"@")
			if k.Key == key || scoped && holder != "" {
				out = append(out, inboxRecord{channel: channel, account: k.Account, key: k.Key, base: key, holder: holder})
			}
		}
	}
	return out, nil
}

// claimReplica takes the lease of replica holder, which must be gone, for me: of the
// replicas that find it gone exactly one gets it, and adopts what it left. false when the
// holder runs or another replica's claim is live.
func claimReplica(ctx context.Context, st *store.Store, holder, me string, now time.Time) (bool, error) {
	name := engine.ReplicaLease(holder)
	l, err := st.Lease(ctx, name, now)
	switch {
	case errors.Is(err, core.ErrNotFound):
	case err != nil:
		return false, err
	case l.Owner == me:
	case l.ExpiresAt.After(now) && !engine.OwnerGone(l.Owner):
		return false, nil
	case l.ExpiresAt.After(now):
		// A process of this host that has ended: free its lease before it expires.
		if err := st.ReleaseLease(ctx, name, l.Owner); err != nil {
			return false, err
		}
	}
	_, ok, err := st.AcquireLease(ctx, name, me, now, claimTTL)
	return ok, err
}

// claimTTL bounds how long a claimer that dies keeps others from a dead replica's work.
const claimTTL = time.Minute

// releaseClaim gives up the claim on a dead replica once its work is taken over.
func releaseClaim(ctx context.Context, st *store.Store, holder, me string, log *slog.Logger) {
	if err := st.ReleaseLease(context.WithoutCancel(ctx), engine.ReplicaLease(holder), me); err != nil {
		log.Warn("releasing a dead replica's lease", "replica", holder, "err", err)
	}
}

// startReplica takes this replica's lease and adopts the inboxes of replicas that are
// gone, on PostgreSQL; stop releases the lease once the channels have stopped.
func startReplica(ctx context.Context, cfg *Config, st *store.Store, now func() time.Time, log *slog.Logger) (stop func(), err error) {
	if !cfg.Store.postgres() {
		return func() {}, nil
	}
	owner := engine.ProcessOwner()
	el := &store.Elector{Name: engine.ReplicaLease(owner), Owner: owner, St: st, Now: now, Log: log}
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
