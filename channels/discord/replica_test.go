package discord

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// follower is a second replica beside an env's: its own store handle on the env's
// database, its own adapter (a real discordgo session against the same fake), Hub and
// engine, and only RunInteractions running, as on a replica that does not hold the
// gateway lease. Interactions the fake sends go to its endpoint.
type follower struct {
	ch   *Channel
	st   *store.Store
	eng  *engine.Engine
	hook *ixSender
}

func newFollower(e *env) *follower {
	t := e.TB
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(e.Dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ch, err := newChannel(context.Background(), e.cfg, st, e.Log, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.InteractionsReady(); err == nil {
		t.Error("InteractionsReady() before RunInteractions = nil")
	}
	f := &follower{ch: ch, st: st}
	hub := channels.NewHub(e.Log, ch)
	f.eng = engine.NewEngine(e.Core, engine.Deps{Store: st, Model: e.Model, Out: hub, Log: e.Log})
	srv := httpserver.New(httpserver.Config{}, nil, nil)
	ch.RegisterHTTP(srv)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	f.hook = newIxSender(hs.URL+InteractionsPath, e.cfg.Now)
	t.Cleanup(f.hook.wg.Wait)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.RunInteractions(ctx, f.eng) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunInteractions returned %v", err)
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		if err := f.eng.Wait(wctx); err != nil {
			t.Errorf("the follower's engine did not go idle: %v", err)
		}
	})
	e.Eventually("the follower taking interactions", func() bool { return ch.InteractionsReady() == nil })
	e.fd.mu.Lock()
	e.fd.hook = f.hook
	e.fd.mu.Unlock()
	return f
}

// A plan proposed through the leader's gateway is accepted by a click that the load
// balancer sent to the other replica: that replica never connects to the gateway, yet
// it verifies the request, answers with the deferred update, its engine decides and runs
// the turn, and the follow-up, the decided plan's edit and the progress reach Discord
// through its own REST client. A forged request to it is 401 and stores nothing.
func TestReplicaWithoutTheGatewayHandlesHTTPInteractions(t *testing.T) {
	e := newEnv(t, httpInteractions)
	e.Model.Push(sid("C1"),
		channeltest.Proposal("Docs cleanup", "Reword intro"),
		channeltest.Progress(map[string]string{"Reword intro": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded."})
	e.fd.say("C1", alice, "/plan on tidy the docs", true)
	plan := e.waitPlan("C1", "docs-cleanup-v1.md")
	s := e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()
	sessions, _, _, _ := e.fd.gwStats()

	f := newFollower(e)
	if err := f.ch.Ready(); err == nil || !strings.Contains(err.Error(), "gateway not connected") {
		t.Errorf("the follower's Ready() = %v; want only the gateway missing", err)
	}

	// Forged first: another key signed it. Nothing is answered, decided or stored.
	forgedID := "7777777777"
	body := e.interactionBody(forgedID)
	ts := f.hook.ts()
	req, _ := http.NewRequest(http.MethodPost, f.hook.url, strings.NewReader(string(body)))
	req.Header.Set("X-Signature-Timestamp", ts)
	req.Header.Set("X-Signature-Ed25519", discordSign(ed25519Other(t), ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged interaction on the follower answered %d, want 401", resp.StatusCode)
	}
	if seen, err := f.st.SeenInbound(t.Context(), core.InboundKey{Channel: Name, Account: "G1", EventID: forgedID}); err != nil || seen {
		t.Errorf("the forged interaction is stored as handled: %v (%v)", seen, err)
	}
	if n := len(e.fd.callbacksOf(forgedID)); n != 0 {
		t.Errorf("the forged interaction got %d callbacks", n)
	}

	click := e.fd.click(alice, plan, "plan:a:"+s.ApprovalID)
	if cb := e.waitCallback(click); cb.Type != 6 {
		t.Errorf("the follower answered the click with type %d, want 6 (deferred update)", cb.Type)
	}
	if code := f.hook.statusOf(click); code != http.StatusOK {
		t.Errorf("the follower answered the click's request %d", code)
	}
	e.fd.waitText("C1", "All done: the intro is reworded")
	e.waitPhase("C1", core.PhaseOff)
	wctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.eng.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if fu := e.followups(click); len(fu) != 1 || !strings.Contains(fu[0].Content, "Accepted plan v1") {
		t.Errorf("follow-ups of the click %q, want one saying the plan was accepted", contents(fu))
	}
	for _, m := range e.fd.shown("C1") {
		if m.ID == plan.ID && (len(buttonsOf(m)) != 0 || !strings.Contains(m.Content, "accepted by Alice")) {
			t.Errorf("the decided plan message %q with buttons %q, want the decision and no buttons", m.Content, buttonsOf(m))
		}
	}
	if seen, err := f.st.SeenInbound(t.Context(), core.InboundKey{Channel: Name, Account: "G1", EventID: click}); err != nil || !seen {
		t.Errorf("the click is not stored as handled: %v (%v)", seen, err)
	}
	if n, _, _, _ := e.fd.gwStats(); n != sessions {
		t.Errorf("gateway sessions went from %d to %d: the follower connected to the gateway", sessions, n)
	}
	if e.Model.CallCount() != 3 {
		t.Errorf("the model was called %d times, want 3 (the proposal, the step, the summary)", e.Model.CallCount())
	}
}

// ed25519Other is a key that is not the application's.
func ed25519Other(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
