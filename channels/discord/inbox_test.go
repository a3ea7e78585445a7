package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/httpserver"
)

// testClock is the adapters' injected clock: the tests move it, nothing waits for it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// dyingHandler takes messages as the engine does and never reports their
// outcome: the process dies first. With inner set, the message is handled by that engine
// (committed, answered) before the process dies; without it, nothing is committed.
type dyingHandler struct {
	inner *core.Engine

	mu   sync.Mutex
	got  []core.Message
	errs chan error // inner's outcomes
}

// EnqueueThen never calls then.
func (h *dyingHandler) EnqueueThen(ctx context.Context, m core.Message, _ func(error)) {
	h.mu.Lock()
	h.got = append(h.got, m)
	h.mu.Unlock()
	if h.inner != nil {
		h.inner.EnqueueThen(ctx, m, func(err error) { h.errs <- err })
	}
}

func (h *dyingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// process is one adapter run by a test, beside the env's own: a process that is killed.
type process struct {
	ch     *Channel
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// runProcess starts an adapter on st against the env's fake, with the handler handler
// makes for it, and waits until it takes interactions; with interactions http the fake
// posts them to its endpoint.
func (e *env) runProcess(st State, handler func(*Channel) channels.Handler) *process {
	t := e.TB
	t.Helper()
	ch, err := newChannel(context.Background(), e.cfg, st, e.Log, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	h := handler(ch)
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{ch: ch, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- ch.Run(ctx, h) }()
	t.Cleanup(func() { p.kill(t) })
	if e.cfg.Interactions == InteractionsHTTP {
		srv := httpserver.New(httpserver.Config{}, nil, nil)
		ch.RegisterHTTP(srv)
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		hook := newIxSender(hs.URL+InteractionsPath, e.cfg.Now)
		t.Cleanup(hook.wg.Wait)
		e.fd.mu.Lock()
		e.fd.hook = hook
		e.fd.mu.Unlock()
	}
	e.Eventually("the process taking interactions", func() bool { return ch.Ready() == nil })
	return p
}

// kill ends the process's Run; its handler never reports, so nothing it was given is
// settled, as after kill -9.
func (p *process) kill(t testing.TB) {
	t.Helper()
	p.once.Do(func() {
		p.cancel()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
}

// savedInbox reads the interactions inbox from the store: what a restart finds on disk.
func (e *env) savedInbox() []channels.InboxEntry {
	e.TB.Helper()
	v, ok, err := e.Store.ChannelState(context.Background(), Name, e.fd.botID, inboxKey)
	if err != nil {
		e.TB.Fatal(err)
	}
	if !ok {
		return nil
	}
	var s struct {
		Pending []channels.InboxEntry `json:"pending"`
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		e.TB.Fatalf("the saved inbox %q does not decode: %v", v, err)
	}
	return s.Pending
}

func (e *env) seen(id string) bool {
	e.TB.Helper()
	ok, err := e.Store.SeenInbound(context.Background(), core.InboundKey{Channel: Name, Account: "G1", EventID: id})
	if err != nil {
		e.TB.Fatal(err)
	}
	return ok
}

// crashAfterAck plays a process that acknowledged interaction send's and died before
// its engine committed anything: the interaction is on disk at the ack, with its token.
func (e *env) crashAfterAck(send func() string, wantType int) string {
	t := e.TB
	t.Helper()
	e.Crash()
	dying := &dyingHandler{}
	p := e.runProcess(e.Store, func(*Channel) channels.Handler { return dying })
	id := send()
	if cb := e.waitCallback(id); cb.Type != wantType {
		t.Errorf("interaction answered with type %d, want %d (deferred)", cb.Type, wantType)
	}
	saved := e.savedInbox()
	if len(saved) != 1 || saved[0].Key != id || !strings.Contains(string(saved[0].Data), "itok-"+id) {
		t.Fatalf("at the ack the store holds the inbox %+v; want interaction %s with its token", saved, id)
	}
	e.Eventually("the message handed to the dying engine", func() bool { return dying.count() == 1 })
	p.kill(t)
	if e.seen(id) {
		t.Fatal("the interaction is committed: the crash came too late to test anything")
	}
	return id
}

// An Accept click acknowledged (deferred update) by a process killed before its engine
// committed is answered exactly once by the restarted process, as a follow-up through
// the webhook API with the saved token; the decision is stored and the inbox emptied.
func TestInteractionAcknowledgedBeforeACrashIsAnsweredAfterTheRestart(t *testing.T) {
	for _, mode := range []string{InteractionsGateway, InteractionsHTTP} {
		t.Run(mode, func(t *testing.T) {
			clk := newTestClock()
			e := newEnv(t, func(e *env) {
				e.cfg.Now = clk.now
				if mode == InteractionsHTTP {
					httpInteractions(e)
				}
			})
			plan, s := e.proposePlan("Docs cleanup", "Reword intro")
			click := e.crashAfterAck(func() string { return e.fd.click(alice, plan, "plan:a:"+s.ApprovalID) }, 6)

			clk.advance(10 * time.Minute) // the token is still valid
			e.Model.Push(sid("C1"), channeltest.Progress(map[string]string{"Reword intro": "completed"}),
				core.ModelResponse{Text: "All done: the intro is reworded."})
			e.Start()
			e.fd.waitText("C1", "All done: the intro is reworded")
			e.waitPhase("C1", core.PhaseOff)
			e.Idle()
			if fu := e.followups(click); len(fu) != 1 || !strings.Contains(fu[0].Content, "Accepted plan v1") {
				t.Errorf("follow-ups of the click %q, want one saying the plan was accepted", contents(fu))
			}
			if n := strings.Count(strings.Join(contents(e.fd.all()), "\n"), "Accepted plan v1"); n != 1 {
				t.Errorf("the acceptance is shown %d times, want once", n)
			}
			if n := len(e.fd.callbacksOf(click)); n != 1 {
				t.Errorf("the click got %d callbacks, want the one before the crash", n)
			}
			if !e.seen(click) {
				t.Error("the replayed click is not stored as handled")
			}
			e.Eventually("the inbox emptied on disk", func() bool { return len(e.savedInbox()) == 0 })
		})
	}
}

// A Revise modal submitted and acknowledged more than 15 minutes (by the injected clock)
// before the restart has a dead token: its outcome is an ordinary channel message, and
// no webhook call is made with the token.
func TestStaleInteractionIsAnsweredInTheChannel(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, func(e *env) { e.cfg.Now = clk.now })
	_, s := e.proposePlan("Docs cleanup", "Reword intro")
	sub := e.crashAfterAck(func() string {
		return e.fd.submit("C1", alice, modalID(s.ApprovalID), "shorter, please")
	}, 6)

	clk.advance(16 * time.Minute)
	e.Model.Push(sid("C1"), channeltest.Proposal("Docs cleanup", "Reword intro briefly"))
	e.Start()
	e.waitPlan("C1", "-v2.md")
	e.Idle()
	if fu := e.followups(sub); len(fu) != 0 {
		t.Errorf("a stale interaction was followed up: %q", contents(fu))
	}
	if calls := e.fd.callsMatching(`/webhooks/.*itok-` + sub); len(calls) != 0 {
		t.Errorf("%d webhook calls with the expired token", len(calls))
	}
	var answers []string
	for _, m := range e.fd.shown("C1") {
		if !m.Webhook && strings.Contains(m.Content, "Sent plan v1 back for revision") {
			answers = append(answers, m.Content)
		}
	}
	if len(answers) != 1 {
		t.Errorf("channel messages saying the plan was sent back %q, want one", answers)
	}
	if got := e.Session(sid("C1")); got.Phase != core.PhaseAwaitingApproval || !e.seen(sub) {
		t.Errorf("after the replay: phase %s, stored %v; want the revision handled", got.Phase, e.seen(sub))
	}
	e.Eventually("the inbox emptied on disk", func() bool { return len(e.savedInbox()) == 0 })
}

// A /plan accept command that the dying process's engine had committed and answered
// (its deferred answer edited) before the crash, with the inbox not yet told, is
// replayed and dropped by the engine's inbound key: not decided or answered twice, and
// its answer is not removed as an unanswered placeholder.
func TestInteractionCommittedBeforeACrashIsNotAnsweredTwice(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, func(e *env) { e.cfg.Now = clk.now })
	e.proposePlan("Docs cleanup", "Reword intro")
	e.Crash()
	e.Model.Push(sid("C1"), channeltest.Progress(map[string]string{"Reword intro": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded."})
	dying := &dyingHandler{errs: make(chan error, 1)}
	p := e.runProcess(e.Store, func(ch *Channel) channels.Handler {
		dying.inner = core.NewEngine(e.Core, core.Deps{Store: e.Store, Model: e.Model, Out: channels.NewHub(e.Log, ch), Log: e.Log})
		return dying
	})
	cmd := e.fd.command("C1", alice, "accept", "", "")
	if err := <-dying.errs; err != nil {
		t.Fatalf("the first engine failed: %v", err)
	}
	e.fd.waitText("C1", "All done: the intro is reworded")
	wctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := dying.inner.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if saved := e.savedInbox(); len(saved) != 1 || saved[0].Key != cmd || !e.seen(cmd) {
		t.Fatalf("before the crash: inbox %+v, committed %v; want both", saved, e.seen(cmd))
	}
	p.kill(t)
	before := contents(e.fd.all())

	e.Start()
	e.Eventually("the inbox emptied on disk", func() bool { return len(e.savedInbox()) == 0 })
	e.Idle()
	if !strings.Contains(e.Logs.String(), "replaying discord interactions") {
		t.Error("the restarted process did not replay the saved command")
	}
	if after := contents(e.fd.all()); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("the replay changed what Discord shows:\nbefore %q\nafter  %q", before, after)
	}
	if n := strings.Count(strings.Join(contents(e.fd.all()), "\n"), "Accepted plan v1"); n != 1 {
		t.Errorf("the acceptance is shown %d times, want once", n)
	}
	for _, m := range e.followups(cmd) {
		if m.Deleted {
			t.Errorf("the command's answer %q was deleted by the replay", m.Content)
		}
	}
	if e.Model.CallCount() != 3 {
		t.Errorf("the model was called %d times, want 3: the turn ran once", e.Model.CallCount())
	}
}

// inboxFailing refuses to save the interactions inbox: a full disk.
type inboxFailing struct{ State }

func (s inboxFailing) SetChannelState(ctx context.Context, channel, account, key, value string) error {
	if key == inboxKey {
		return errors.New("database or disk is full")
	}
	return s.State.SetChannelState(ctx, channel, account, key, value)
}

func (s inboxFailing) SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error {
	if key == inboxKey {
		return errors.New("database or disk is full")
	}
	return s.State.SetChannelStateLazy(ctx, channel, account, key, value)
}

func (s inboxFailing) SetChannelStateWith(ctx context.Context, channel, account, key string, lazy bool, value func() (string, error)) error {
	if key == inboxKey {
		return errors.New("database or disk is full")
	}
	return s.State.SetChannelStateWith(ctx, channel, account, key, lazy, value)
}

// An interaction that cannot be saved is not acknowledged as taken: no deferred answer,
// the engine never gets it, nothing is stored; the person is told nothing changed.
func TestInteractionNotSavedIsNotAcknowledged(t *testing.T) {
	for _, mode := range []string{InteractionsGateway, InteractionsHTTP} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, func(e *env) {
				if mode == InteractionsHTTP {
					httpInteractions(e)
				}
			})
			plan, s := e.proposePlan("Docs cleanup", "Reword intro")
			e.Crash()
			h := &dyingHandler{}
			e.runProcess(inboxFailing{e.Store}, func(*Channel) channels.Handler { return h })
			click := e.fd.click(alice, plan, "plan:a:"+s.ApprovalID)
			cb := e.waitCallback(click)
			var data struct {
				Content string `json:"content"`
				Flags   int    `json:"flags"`
			}
			_ = json.Unmarshal(cb.Data, &data)
			if cb.Type != 4 || data.Flags&64 == 0 || data.Content != replyNotStored {
				t.Errorf("the click was answered with type %d %+v; want the ephemeral %q", cb.Type, data, replyNotStored)
			}
			if n := len(e.fd.callbacksOf(click)); n != 1 {
				t.Errorf("%d callbacks, want 1", n)
			}
			if h.count() != 0 || e.seen(click) || len(e.savedInbox()) != 0 {
				t.Errorf("handed over %d, stored %v, inbox %+v; want nothing", h.count(), e.seen(click), e.savedInbox())
			}
			if got := e.Session(sid("C1")); got.Phase != core.PhaseAwaitingApproval {
				t.Errorf("phase %s, want still awaiting approval", got.Phase)
			}
		})
	}
}

// With interactions gateway the inbox is one record that the replica holding the gateway
// keeps. A replica that held it before, lost it, and is elected again after the other
// leader died with an acknowledged click merges that leader's record into its own inbox
// and answers the click once, as a follow-up.
func TestGatewayLeaderElectedAgainReplaysTheSharedInbox(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, func(e *env) { e.cfg.Now = clk.now })
	plan, s := e.proposePlan("Docs cleanup", "Reword intro")
	click := e.crashAfterAck(func() string { return e.fd.click(alice, plan, "plan:a:"+s.ApprovalID) }, 6)

	e.Model.Push(sid("C1"), channeltest.Progress(map[string]string{"Reword intro": "completed"}),
		core.ModelResponse{Text: "All done: the intro is reworded."})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Channel.RunGateway(ctx, e.Engine) }() // the first adapter, elected again
	t.Cleanup(func() {
		cancel()
		<-done
	})
	e.fd.waitText("C1", "All done: the intro is reworded")
	e.Idle()
	if fu := e.followups(click); len(fu) != 1 || !strings.Contains(fu[0].Content, "Accepted plan v1") {
		t.Errorf("follow-ups of the click %q, want one saying the plan was accepted", contents(fu))
	}
	if n := strings.Count(strings.Join(contents(e.fd.all()), "\n"), "Accepted plan v1"); n != 1 {
		t.Errorf("the acceptance is shown %d times, want once", n)
	}
	e.Eventually("the inbox emptied on disk", func() bool { return len(e.savedInbox()) == 0 })
}
