package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// restDiscord is the part of Discord's REST API a replica without the gateway uses: who
// the bot is, a channel's kind, and the webhook calls that follow an interaction. It
// records every request; the gateway's URL (GET /gateway/bot) is one it must never ask.
type restDiscord struct {
	mu    sync.Mutex
	calls []string // "METHOD path"
	edits []string // bodies of the edits of an interaction's original answer
}

func (f *restDiscord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v9/users/@me":
		_, _ = io.WriteString(w, `{"id":"900","username":"plangate","bot":true}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v9/channels/"):
		_, _ = io.WriteString(w, `{"id":"C1","guild_id":"G1","type":0}`)
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, "/api/v9/webhooks/900/") && strings.HasSuffix(r.URL.Path, "/messages/@original"):
		f.mu.Lock()
		f.edits = append(f.edits, string(body))
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{"id":"5001","channel_id":"C1","type":0,"content":"edited"}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"Unknown route","code":0}`)
	}
}

func (f *restDiscord) seen() (calls, edits []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...), append([]string(nil), f.edits...)
}

// signedPost posts body to url signed with key as Discord signs interaction requests.
func signedPost(t *testing.T, url string, key ed25519.PrivateKey, body string) (int, string) {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Signature-Timestamp", ts)
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, []byte(ts+body))))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A replica that does not hold the Discord gateway lease (another replica does) serves
// the interactions endpoint all the same, wired as serve wires it (elect, track, the
// HTTP server): /readyz is 200 with the standby note, a PING is answered, a forged
// request is 401 with nothing stored, and a signed /plan command gets its deferred
// answer, is handled by this replica's engine (stored as handled) and its outcome edits
// the deferred answer through the webhook API. The replica never asks for the gateway.
func TestDiscordInteractionsOnAFollowerReplica(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const holder = "otherhost/4242/leader"
	if _, ok, err := st.AcquireLease(ctx, "gateway:discord:900", holder, time.Now(), time.Hour); err != nil || !ok {
		t.Fatalf("taking the gateway lease for the other replica: %v %v", ok, err)
	}
	fake := &restDiscord{}
	api := httptest.NewServer(fake)
	defer api.Close()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.HTTP = HTTPConfig{Listen: "127.0.0.1:0", MaxBody: 1 << 20}
	cfg.Channels.Discord = discord.Config{Enabled: true, Token: "test-token.abc.DEF_secret", APIURL: api.URL,
		Interactions: discord.InteractionsHTTP, PublicKey: hex.EncodeToString(pub)}
	log := channeltest.NewLogger(&channeltest.LogBuffer{})
	dc, err := discord.New(ctx, cfg.Channels.Discord, st, log)
	if err != nil {
		t.Fatal(err)
	}
	w, err := listenHTTP(cfg, st, log)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	ts := httptest.NewServer(w.srv.Handler())
	defer ts.Close()
	eng := engine.NewEngine(engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, MaxIterations: 10, PlanMode: true},
		engine.Deps{Store: st, Model: channeltest.NewModel(), Out: channels.NewHub(log, dc), Log: log})
	running := w.track(elect([]channels.Channel{dc}, cfg, st, time.Now, log))
	workCtx := context.WithoutCancel(ctx)
	hubDone := make(chan error, 1)
	go func() { hubDone <- channels.NewHub(log, running...).Run(ctx, workHandler{eng: eng, ctx: workCtx}) }()
	defer func() {
		cancel()
		if err := <-hubDone; err != nil {
			t.Errorf("the channels returned %v", err)
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := eng.Wait(wctx); err != nil {
			t.Errorf("the engine did not go idle: %v", err)
		}
	}()

	var r readyJSON
	deadline := time.Now().Add(10 * time.Second)
	for code := 0; code != 200; {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on the follower never went 200: %d %+v", code, r)
		}
		time.Sleep(5 * time.Millisecond)
		code, r = readyz(t, ts.URL)
	}
	if want := "standby for the discord gateway (held by " + holder + ")"; r.Checks["discord"] != want {
		t.Errorf("/readyz discord check %q, want %q", r.Checks["discord"], want)
	}

	url := ts.URL + discord.InteractionsPath
	if code, body := signedPost(t, url, key, `{"id":"1","application_id":"900","type":1,"token":"t","version":1}`); code != 200 || strings.TrimSpace(body) != `{"type":1}` {
		t.Errorf("PING on the follower: %d %s", code, body)
	}
	command := func(id string) string {
		b, _ := json.Marshal(map[string]any{
			"id": id, "application_id": "900", "type": 2, "token": "itok-" + id, "version": 1,
			"channel_id": "C1", "guild_id": "G1", "member": map[string]any{"user": map[string]any{"id": "111", "username": "alice"}},
			"data": map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{map[string]any{"name": "status", "type": 1}}},
		})
		return string(b)
	}
	_, other, _ := ed25519.GenerateKey(nil)
	const forged, signed = "1300000000000000001", "1300000000000000002"
	if code, _ := signedPost(t, url, other, command(forged)); code != http.StatusUnauthorized {
		t.Errorf("a forged interaction on the follower: %d, want 401", code)
	}
	if ss, err := st.Sessions(ctx); err != nil || len(ss) != 0 {
		t.Errorf("a forged interaction made sessions: %v (%v)", ss, err)
	}
	code, body := signedPost(t, url, key, command(signed))
	if code != 200 || !strings.Contains(body, `"type":5`) {
		t.Errorf("the /plan command on the follower: %d %s, want 200 with the deferred answer (type 5)", code, body)
	}
	var edits []string
	for deadline := time.Now().Add(10 * time.Second); len(edits) == 0; {
		if time.Now().After(deadline) {
			calls, _ := fake.seen()
			t.Fatalf("the deferred answer was never edited; Discord saw %q", calls)
		}
		time.Sleep(5 * time.Millisecond)
		_, edits = fake.seen()
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := eng.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{forged: false, signed: true} {
		seen, err := st.SeenInbound(ctx, core.InboundKey{Channel: discord.Name, Account: "G1", EventID: id})
		if err != nil || seen != want {
			t.Errorf("interaction %s stored as handled: %v (%v), want %v", id, seen, err, want)
		}
	}
	calls, _ := fake.seen()
	for _, c := range calls {
		if strings.Contains(c, "/gateway") || strings.Contains(c, "/commands") {
			t.Errorf("the follower asked Discord %q: the gateway's business, on the leader", c)
		}
	}
}

// splitFake stands for a channel whose receiving is partly elected (discord with
// interactions http): it tells when each half starts and ends.
type splitFake struct {
	pollerFake                      // Run: must not be called
	shared, sharedEnd chan struct{} // RunInteractions
	gw, gwEnd         chan struct{} // RunGateway
	down              atomic.Bool   // InteractionsReady fails
}

func newSplitFake() *splitFake {
	mk := func() chan struct{} { return make(chan struct{}, 4) }
	return &splitFake{pollerFake: pollerFake{started: mk(), ended: mk()}, shared: mk(), sharedEnd: mk(), gw: mk(), gwEnd: mk()}
}

func (s *splitFake) Name() string           { return "discord" }
func (s *splitFake) HTTPInteractions() bool { return true }
func (s *splitFake) RunInteractions(ctx context.Context, _ channels.Handler) error {
	s.shared <- struct{}{}
	<-ctx.Done()
	s.sharedEnd <- struct{}{}
	return nil
}
func (s *splitFake) RunGateway(ctx context.Context, _ channels.Handler) error {
	s.gw <- struct{}{}
	<-ctx.Done()
	s.gwEnd <- struct{}{}
	return nil
}
func (s *splitFake) InteractionsReady() error {
	if s.down.Load() {
		return errors.New("discord: the interactions endpoint is not taking requests")
	}
	return nil
}

// Of two replicas, both run the shared half all along; only the leader runs the gateway,
// and when it stops the other takes the gateway over without restarting its shared half.
// A standby is ready only while its shared half takes requests.
func TestElectedSplitChannel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	clock := &electionClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	log := slog.New(slog.DiscardHandler)
	mk := func(owner string) (*electedChannel, *splitFake, chan time.Time) {
		st, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		tick := make(chan time.Time)
		f := newSplitFake()
		el := &store.Elector{Name: "gateway:discord:900", Owner: owner, St: st, Now: clock.now, Log: log,
			After: func(time.Duration) <-chan time.Time { return tick }}
		return &electedChannel{Channel: f, el: el, what: "the discord gateway", log: log, split: f}, f, tick
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting: %s", what)
		}
	}
	a, fa, _ := mk("host/1/a")
	b, fb, tickB := mk("host/2/b")
	actx, stopA := context.WithCancel(t.Context())
	bctx, stopB := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	aDone := make(chan struct{})
	wg.Go(func() { _ = a.Run(actx, nil); close(aDone) })
	wait(fa.gw, "the first replica's gateway")
	wait(fa.shared, "the first replica's interactions")
	wg.Go(func() { _ = b.Run(bctx, nil) })
	wait(fb.shared, "the standby's interactions")
	tickB <- time.Time{} // b has campaigned once it takes the next tick
	if len(fb.gw) > 0 || len(fa.started) > 0 || len(fb.started) > 0 {
		t.Fatal("the standby runs the gateway, or a whole Run was called")
	}
	var note httpserver.ReadyNote
	if err := b.Ready(); !errors.As(err, &note) || !strings.Contains(string(note), "standby for the discord gateway (held by host/1/a)") {
		t.Errorf("standby Ready() = %v", err)
	}
	fb.down.Store(true)
	if err := b.Ready(); err == nil || errors.As(err, &note) {
		t.Errorf("standby Ready() with the endpoint down = %v, want not ready", err)
	}
	fb.down.Store(false)

	stopA() // a clean stop releases the lease
	wait(fa.gwEnd, "the leader's gateway to stop")
	wait(fa.sharedEnd, "the leader's interactions to stop")
	wait(aDone, "the leader to release the lease")
	tickB <- time.Time{}
	wait(fb.gw, "the standby to take the gateway over")
	if len(fb.shared) > 0 || len(fb.sharedEnd) > 0 {
		t.Error("the standby's interactions restarted at the take-over")
	}
	stopB()
	wg.Wait()
	if len(fb.gwEnd) != 1 || len(fb.sharedEnd) != 1 {
		t.Errorf("at the stop: gateway ended %d, interactions ended %d times; want 1 and 1", len(fb.gwEnd), len(fb.sharedEnd))
	}
}
