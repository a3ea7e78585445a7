package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// Each replica's webhook inbox has its own key; a starting replica adopts the record of a
// replica whose lease ran out (one per account), never a live replica's.
func TestReplicaInboxes(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := defaultConfig()
	cfg.Store.Driver = store.DriverPostgres
	cfg.Channels.Telegram.Enabled, cfg.Channels.Telegram.Mode = true, telegram.ModeWebhook
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	dead := replicaState{st: st, inbox: "updates", owner: "elsewhere/1/dead"}
	live := replicaState{st: st, inbox: "updates", owner: "elsewhere/2/live"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dead.SetChannelState(ctx, "telegram", "bot", "updates", `{"pending":["dead"]}`))
	must(live.SetChannelState(ctx, "telegram", "bot", "updates", `{"pending":["live"]}`))
	must(dead.SetChannelState(ctx, "telegram", "bot", "prompt:1:2", "shared"))
	if v, ok, _ := live.ChannelState(ctx, "telegram", "bot", "updates"); !ok || v != `{"pending":["live"]}` {
		t.Fatalf("the live replica reads %q: the inboxes are not separate", v)
	}
	if v, ok, _ := live.ChannelState(ctx, "telegram", "bot", "prompt:1:2"); !ok || v != "shared" {
		t.Fatalf("other keys must be shared: %q %v", v, ok)
	}
	endedLease(t, st, engine.ReplicaLease("elsewhere/1/dead"), "elsewhere/1/dead")
	if _, _, err := st.AcquireLease(ctx, engine.ReplicaLease("elsewhere/2/live"), "elsewhere/2/live", t0.Add(10*time.Second), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	// A replica takes its own lease before it adopts (startReplica).
	if _, _, err := st.AcquireLease(ctx, engine.ReplicaLease("elsewhere/3/new"), "elsewhere/3/new", t0.Add(20*time.Second), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	must(adoptInboxes(ctx, cfg, st, "elsewhere/3/new", t0.Add(20*time.Second), log))
	me := replicaState{st: st, inbox: "updates", owner: "elsewhere/3/new"}
	if v, ok, _ := me.ChannelState(ctx, "telegram", "bot", "updates"); !ok || v != `{"pending":["dead"]}` {
		t.Errorf("the new replica's inbox is %q, want the dead replica's", v)
	}
	if _, ok, _ := dead.ChannelState(ctx, "telegram", "bot", "updates"); ok {
		t.Error("the dead replica's record is still there")
	}
	if v, _, _ := live.ChannelState(ctx, "telegram", "bot", "updates"); v != `{"pending":["live"]}` {
		t.Errorf("the live replica's inbox changed: %q", v)
	}
	// Another starting replica finds nothing more to adopt.
	must(adoptInboxes(ctx, cfg, st, "elsewhere/4/next", t0.Add(20*time.Second), log))
	if _, ok, _ := (replicaState{st: st, inbox: "updates", owner: "elsewhere/4/next"}).ChannelState(ctx, "telegram", "bot", "updates"); ok {
		t.Error("a second replica adopted a record too")
	}
}

// A replica takes over the sessions whose lease ran out or whose holder, a process of
// this host, has ended; never a live holder's.
func TestLeftSessions(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir()+"/plangate.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		session, owner string
		at             time.Time
	}{
		{"live", "elsewhere/1/x", t0},
		{"expired", "elsewhere/2/y", t0.Add(-time.Minute)},
		{"gone", fmt.Sprintf("%s/%d/z", host, gone.Process.Pid), t0},
	} {
		if _, _, err := st.AcquireLease(ctx, "session:"+l.session, l.owner, l.at, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	got := leftSessions(ctx, st, t0.Add(time.Second), log)
	if !slices.Equal(got, []string{"expired", "gone"}) {
		t.Errorf("leftSessions = %v, want [expired gone]", got)
	}
}
