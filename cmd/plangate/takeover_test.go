package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// fakeAdopter is a running adapter that records the inbox records it is handed.
type fakeAdopter struct {
	name, account string

	mu      sync.Mutex
	refuse  error  // AdoptInbox's answer while set
	during  func() // called in AdoptInbox, when set
	adopted []string
	got     chan string
}

func newFakeAdopter(name, account string) *fakeAdopter {
	return &fakeAdopter{name: name, account: account, got: make(chan string, 16)}
}

func (f *fakeAdopter) Name() string                                { return f.name }
func (f *fakeAdopter) Run(context.Context, channels.Handler) error { return nil }
func (f *fakeAdopter) Send(context.Context, core.Reply) (string, error) {
	return "", nil
}
func (f *fakeAdopter) InboxAccount() string { return f.account }

func (f *fakeAdopter) AdoptInbox(_ context.Context, saved string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return 0, f.refuse
	}
	f.adopted = append(f.adopted, saved)
	f.got <- saved
	if f.during != nil {
		f.during()
	}
	return 1, nil
}

func (f *fakeAdopter) records() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(slices.Values(f.adopted))
}

// fakeEngine records what takeover asks of the engine.
type fakeEngine struct {
	mu        sync.Mutex
	delivered int
	resumed   []func(core.Session) bool
}

func (e *fakeEngine) DeliverLeft(context.Context, []string, time.Duration) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delivered++
	return 0, nil
}

func (e *fakeEngine) StartResume(_ context.Context, only func(core.Session) bool) (func() int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resumed = append(e.resumed, only)
	return func() int { return 0 }, nil
}

// takeoverTest is one PostgreSQL database with replica leases and inbox records, and a
// running replica's takeover over fake adapters, on a clock the test moves.
type takeoverTest struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	t0    time.Time
	tg    *fakeAdopter
	sl    *fakeAdopter
	eng   *fakeEngine
	clock time.Time
}

func newTakeoverTest(t *testing.T) *takeoverTest {
	ctx := context.Background()
	st, err := store.OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &takeoverTest{t: t, ctx: ctx, st: st, t0: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		tg: newFakeAdopter("telegram", "bot"), sl: newFakeAdopter("slack", "T1"), eng: &fakeEngine{}}
}

// lease gives the running replica owner its lease.
func (x *takeoverTest) lease(owner string) {
	x.t.Helper()
	if _, ok, err := x.st.AcquireLease(x.ctx, engine.ReplicaLease(owner), owner, x.clock, store.ElectionTTL); err != nil || !ok {
		x.t.Fatalf("the lease of %s: %v %v", owner, ok, err)
	}
}

// endedLease leaves the lease name of owner ended by the store's clock, as a holder that
// died does: PostgreSQL decides expiry by its own clock, which a test cannot step, so the
// holder's last renewal is for a millisecond, waited out.
func endedLease(t *testing.T, st *store.Store, name, owner string) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := st.AcquireLease(ctx, name, owner, time.Now(), time.Millisecond); err != nil || !ok {
		t.Fatalf("the lease %s of %s: %v %v", name, owner, ok, err)
	}
	for range 500 {
		l, err := st.Lease(ctx, name, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !l.ExpiresAt.After(time.Now()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the lease %s never ended", name)
}

func (x *takeoverTest) record(channel, account, key, value string) {
	x.t.Helper()
	if err := x.st.SetChannelState(x.ctx, channel, account, key, value); err != nil {
		x.t.Fatal(err)
	}
}

func (x *takeoverTest) has(channel, account, key string) bool {
	x.t.Helper()
	_, ok, err := x.st.ChannelState(x.ctx, channel, account, key)
	if err != nil {
		x.t.Fatal(err)
	}
	return ok
}

// replica is the takeover of the running replica me.
func (x *takeoverTest) replica(me string) *takeover {
	return &takeover{eng: x.eng, st: x.st, served: []string{"telegram", "slack"}, now: func() time.Time { return x.clock },
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), me: me,
		inboxes:  map[string]string{"telegram": "updates", "slack": "inbox"},
		adopters: map[string]channels.InboxAdopter{"telegram": x.tg, "slack": x.sl}}
}

// A replica dies with events it acknowledged in its inbox records and never comes back:
// at the next tick a running replica claims it, hands each of its records (of the accounts
// it serves) to its running adapter, deletes them once adopted, releases the claim and
// resumes every session; a live replica's record, its own and another account's are left.
func TestTakeoverAdoptsADeadReplicasInbox(t *testing.T) {
	x := newTakeoverTest(t)
	const dead, live, me = "elsewhere/1/dead", "elsewhere/2/live", "elsewhere/3/me"
	endedLease(t, x.st, engine.ReplicaLease(dead), dead)
	x.lease(live)
	x.lease(me)
	x.record("telegram", "bot", "updates@"+dead, "tg-dead")
	x.record("telegram", "otherbot", "updates@"+dead, "tg-dead-other-bot")
	x.record("slack", "T1", "inbox@"+dead, "sl-dead")
	x.record("telegram", "bot", "updates@"+live, "tg-live")
	x.record("telegram", "bot", "updates@"+me, "tg-mine")
	x.record("telegram", "bot", "updates-other", "not an inbox")

	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(x.ctx)
	done := make(chan struct{})
	go func() { x.replica(me).run(ctx, ctx, tick); close(done) }()
	tick <- x.clock
	tick <- x.clock // the first tick has ended once the second is taken
	cancel()
	<-done

	if got := x.tg.records(); !slices.Equal(got, []string{"tg-dead"}) {
		t.Errorf("telegram adopted %q, want the dead replica's record of its own bot", got)
	}
	if got := x.sl.records(); !slices.Equal(got, []string{"sl-dead"}) {
		t.Errorf("slack adopted %q, want the dead replica's record", got)
	}
	if x.has("telegram", "bot", "updates@"+dead) || x.has("slack", "T1", "inbox@"+dead) {
		t.Error("an adopted record is still there")
	}
	for _, k := range []struct{ account, key string }{{"otherbot", "updates@" + dead}, {"bot", "updates@" + live}, {"bot", "updates@" + me}, {"bot", "updates-other"}} {
		if !x.has("telegram", k.account, k.key) {
			t.Errorf("the record %s/%s was taken", k.account, k.key)
		}
	}
	if _, err := x.st.Lease(x.ctx, engine.ReplicaLease(dead), time.Now()); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the dead replica's lease after the takeover: %v, want the claim released", err)
	}
	if l, err := x.st.Lease(x.ctx, engine.ReplicaLease(live), time.Now()); err != nil || l.Owner != live {
		t.Errorf("the live replica's lease: %+v %v", l, err)
	}
	x.eng.mu.Lock()
	defer x.eng.mu.Unlock()
	if x.eng.delivered != 1 || len(x.eng.resumed) != 1 {
		t.Fatalf("delivered %d times, resumed %d times; want once each (the second tick finds nothing)", x.eng.delivered, len(x.eng.resumed))
	}
	only := x.eng.resumed[0]
	if !only(core.Session{ID: "a", Address: core.Address{Channel: "slack"}}) || only(core.Session{ID: "b", Address: core.Address{Channel: "discord"}}) {
		t.Error("after a replica died every session of the channels served here is resumed, and only those")
	}
}

// Of two survivors only one claims a dead replica. A record its adapter cannot take now
// (not receiving yet) stays, and is adopted at a later tick though the dead replica's
// lease is gone by then; so is a record a replica left without a lease (it stopped
// cleanly with events left), which resumes no session.
func TestTakeoverClaimsOnceAndRetriesARecordLeft(t *testing.T) {
	x := newTakeoverTest(t)
	const dead, stopped, me, other = "elsewhere/1/dead", "elsewhere/5/stopped", "elsewhere/3/me", "elsewhere/4/other"
	endedLease(t, x.st, engine.ReplicaLease(dead), dead)
	x.record("slack", "T1", "inbox@"+dead, "sl-dead")
	x.record("slack", "T1", "inbox@"+stopped, "sl-stopped")

	if ok, err := claimReplica(x.ctx, x.st, dead, other, x.clock); err != nil || !ok {
		t.Fatalf("the first claim: %v %v", ok, err)
	}
	if ok, err := claimReplica(x.ctx, x.st, dead, me, x.clock); err != nil || ok {
		t.Fatalf("a second survivor claimed the dead replica too: %v %v", ok, err)
	}
	releaseClaim(x.ctx, x.st, dead, other, slog.New(slog.NewTextHandler(io.Discard, nil)))

	x.sl.refuse = channels.ErrNotReceiving
	tk := x.replica(me)
	tk.once(x.ctx)
	if !x.has("slack", "T1", "inbox@"+dead) || !x.has("slack", "T1", "inbox@"+stopped) {
		t.Fatal("a record the adapter did not take was deleted")
	}
	if _, err := x.st.Lease(x.ctx, engine.ReplicaLease(dead), time.Now()); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the claim is kept after a failed adoption: %v", err)
	}
	x.sl.refuse = nil
	x.eng.resumed = nil
	tk.once(x.ctx)
	if got := x.sl.records(); !slices.Equal(got, []string{"sl-dead", "sl-stopped"}) {
		t.Errorf("adopted %q at the next tick, want both records", got)
	}
	if x.has("slack", "T1", "inbox@"+dead) || x.has("slack", "T1", "inbox@"+stopped) {
		t.Error("an adopted record is still there")
	}
	if len(x.eng.resumed) != 0 {
		t.Error("records without a lease resumed every session")
	}

	// A replica thought gone that saves its inbox again while it is adopted keeps the
	// new record: only the value adopted is deleted.
	x.record("slack", "T1", "inbox@"+stopped, "sl-stopped-2")
	x.sl.during = func() { x.record("slack", "T1", "inbox@"+stopped, "sl-stopped-3") }
	tk.once(x.ctx)
	if v, ok, err := x.st.ChannelState(x.ctx, "slack", "T1", "inbox@"+stopped); err != nil || v != "sl-stopped-3" {
		t.Errorf("the record saved again during the adoption: %q %v %v, want it kept", v, ok, err)
	}
}

// Replica A acknowledged a Telegram webhook update and died before it handled it, and
// never comes back. Replica B runs (a real webhook adapter, engine and store): at its next
// takeover tick it adopts A's inbox record and answers the update, once, and A's record
// is gone.
func TestTakeoverAnswersWhatADeadReplicaAcknowledged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := newSoakTelegram()
	tgSrv := httptest.NewServer(tg)
	defer tgSrv.Close()
	model := httptest.NewServer(echoModel(true))
	defer model.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, `store: {driver: postgres, dsn: %q}
plans: {dir: %q}
llm: {provider: openai, base_url: %q, api_key: k, model: echo, max_retries: 0, timeout: 10s}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "4242:soak-token", api_url: %q, mode: webhook, webhook_secret: s}
http: {listen: "127.0.0.1:0", public_url: "http://127.0.0.1:1"}
`, pgtest.Schema(t), filepath.Join(dir, "plans"), model.URL+"/v1", tgSrv.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e := procEnv{stderr: &stderr, now: time.Now, getenv: func(string) string { return "" }}
	cfg, err := loadConfig(cfgPath, e)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	const dead, me = "elsewhere/1/dead", "elsewhere/2/me"
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	endedLease(t, st, engine.ReplicaLease(dead), dead)
	left, _ := json.Marshal(map[string]any{"next": 8, "pending": []json.RawMessage{json.RawMessage(soakMessage(7, 3, "left by A"))}})
	if err := st.SetChannelState(ctx, "telegram", "4242", "updates@"+dead, string(left)); err != nil {
		t.Fatal(err)
	}

	cfg.Channels.Telegram.PublicURL = cfg.HTTP.PublicURL
	ch, err := telegram.New(ctx, cfg.Channels.Telegram, replicaState{st: st, inbox: "updates", owner: me}, log)
	if err != nil {
		t.Fatal(err)
	}
	hub := channels.NewHub(log, ch)
	g, err := startGateway(ctx, cfg, e, log, st, hub, []string{"telegram"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.shutdown(5*time.Second, nil) }()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go func() { _ = hub.Run(runCtx, workHandler{eng: g.eng, ctx: ctx}) }()
	for ch.Ready() != nil { // the webhook registered: receiving
		if ctx.Err() != nil {
			t.Fatal("the webhook adapter never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}

	tk := newTakeover(cfg, g, st, []channels.Channel{ch}, func() time.Time { return t0.Add(20 * time.Second) }, log)
	tk.me = me
	tick := make(chan time.Time)
	go tk.run(runCtx, ctx, tick)
	tick <- t0.Add(20 * time.Second) // one tick
	for tg.countIn(3, "echo: left by A\n") == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the update the dead replica acknowledged was never answered\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok, err := st.ChannelState(ctx, "telegram", "4242", "updates@"+dead); err != nil || ok {
		t.Errorf("the dead replica's record after the adoption: %v %v, want it deleted", ok, err)
	}
	tick <- t0.Add(30 * time.Second) // the first tick has ended; this one finds nothing
	if n := tg.countIn(3, "echo: left by A\n"); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
}
