package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/channels/slack"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// Discord's interactions inbox is kept per replica only where every replica takes
// interactions (interactions http); over the gateway they come to the leader, and the
// record stays shared, as Telegram polling's.
func TestReplicaInboxesDiscord(t *testing.T) {
	cfg := defaultConfig()
	cfg.Channels.Discord.Enabled = true
	if _, ok := replicaInboxes(cfg)[discord.Name]; ok {
		t.Error("interactions gateway: discord's inbox is per replica, want shared")
	}
	cfg.Channels.Discord.Interactions = discord.InteractionsHTTP
	if got := replicaInboxes(cfg)[discord.Name]; got != "inbox" {
		t.Errorf("interactions http: discord's inbox key %q, want inbox per replica", got)
	}
	cfg.Channels.Telegram.Enabled, cfg.Channels.Telegram.Mode = true, telegram.ModeWebhook
	cfg.Channels.Slack.Enabled = true
	if n := len(replicaInboxes(cfg)); n != 3 || replicaInboxes(cfg)[slack.Name] != "inbox" {
		t.Errorf("replicaInboxes = %v", replicaInboxes(cfg))
	}
}

// Replica A acknowledged a /plan command on the interactions endpoint (its deferred
// answer) and died before its engine handled it, and never comes back. Replica B runs a
// real Discord adapter (interactions http, on PostgreSQL, standby for the gateway) and
// engine: at its next takeover tick it adopts A's inbox record, answers the command once
// by editing the deferred answer with the saved token, and A's record is gone.
func TestTakeoverAnswersADiscordInteractionADeadReplicaAcknowledged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const dead, me, leader = "elsewhere/1/dead", "elsewhere/2/me", "elsewhere/3/leader"
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	endedLease(t, st, engine.ReplicaLease(dead), dead)
	if _, ok, err := st.AcquireLease(ctx, "gateway:discord:900", leader, time.Now(), time.Hour); err != nil || !ok {
		t.Fatalf("the gateway lease for the leader: %v %v", ok, err)
	}
	const id = "1300000000000000042"
	ix, _ := json.Marshal(map[string]any{
		"id": id, "application_id": "900", "type": 2, "token": "itok-" + id, "version": 1,
		"channel_id": "C1", "guild_id": "G1", "member": map[string]any{"user": map[string]any{"id": "111", "username": "alice"}},
		"data": map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{map[string]any{"name": "on", "type": 1}}},
	})
	left, _ := json.Marshal(map[string]any{"seq": 1, "pending": []map[string]any{{
		"key": id, "seq": 1, "kind": "command", "ref": t0.Add(-time.Minute).Format(time.RFC3339Nano), "data": json.RawMessage(ix),
	}}})
	if err := st.SetChannelState(ctx, discord.Name, "900", "inbox@"+dead, string(left)); err != nil {
		t.Fatal(err)
	}

	fake := &restDiscord{}
	api := httptest.NewServer(fake)
	defer api.Close()
	pub, _, _ := ed25519.GenerateKey(nil)
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.Store.Driver, cfg.Store.DSN = store.DriverPostgres, "unused"
	cfg.Channels.Discord = discord.Config{Enabled: true, Token: "test-token.abc.DEF_secret", APIURL: api.URL,
		Interactions: discord.InteractionsHTTP, PublicKey: hex.EncodeToString(pub), Now: func() time.Time { return t0 }}
	logs := &channeltest.LogBuffer{}
	log := channeltest.NewLogger(logs)
	dc, err := discord.New(ctx, cfg.Channels.Discord, replicaState{st: st, inbox: "inbox", owner: me}, log)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.NewEngine(engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, MaxIterations: 10, PlanMode: true},
		engine.Deps{Store: st, Model: channeltest.NewModel(), Out: channels.NewHub(log, dc), Log: log})
	runCtx, stopRun := context.WithCancel(ctx)
	hubDone := make(chan error, 1)
	go func() {
		hubDone <- channels.NewHub(log, elect([]channels.Channel{dc}, cfg, st, time.Now, log)...).Run(runCtx, workHandler{eng: eng, ctx: ctx})
	}()
	defer func() {
		stopRun()
		<-hubDone
		_ = eng.Wait(ctx)
	}()
	for dc.InteractionsReady() != nil {
		if ctx.Err() != nil {
			t.Fatal("the interactions endpoint never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}

	tk := &takeover{eng: eng, st: st, served: []string{discord.Name}, now: func() time.Time { return t0.Add(20 * time.Second) },
		log: log, me: me, inboxes: replicaInboxes(cfg), adopters: map[string]channels.InboxAdopter{discord.Name: dc}}
	tick := make(chan time.Time)
	go tk.run(runCtx, ctx, tick)
	tick <- t0.Add(20 * time.Second)
	var edits []string
	for len(edits) == 0 {
		if ctx.Err() != nil {
			calls, _ := fake.seen()
			t.Fatalf("the command the dead replica acknowledged was never answered; Discord saw %q\n%s", calls, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
		_, edits = fake.seen()
	}
	if err := eng.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	tick <- t0.Add(30 * time.Second) // the first tick has ended; this one finds nothing
	if _, edits = fake.seen(); len(edits) != 1 || !strings.Contains(edits[0], "Plan mode is on") {
		t.Errorf("edits of the deferred answer %q, want one saying plan mode is on", edits)
	}
	if _, ok, err := st.ChannelState(ctx, discord.Name, "900", "inbox@"+dead); err != nil || ok {
		t.Errorf("the dead replica's record after the adoption: %v %v, want it deleted", ok, err)
	}
	if seen, err := st.SeenInbound(ctx, core.InboundKey{Channel: discord.Name, Account: "G1", EventID: id}); err != nil || !seen {
		t.Errorf("the adopted command stored as handled: %v (%v)", seen, err)
	}
	s, err := st.Session(ctx, core.Address{Channel: discord.Name, Account: "G1", Chat: "C1"}.SessionID())
	if err != nil || s.Phase != core.PhasePlanning {
		t.Errorf("the session after the adopted /plan on: %+v (%v), want planning", s.Phase, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v, _, _ := st.ChannelState(ctx, discord.Name, "900", "inbox@"+me)
		if !strings.Contains(v, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("this replica's inbox still holds the adopted command: %s", v)
		}
	}
}
