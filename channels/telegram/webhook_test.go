package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/httpserver"
)

const hookSecret = "hook-Secret_0123456789"

// diskState is a store that can run out of space: while full, every write fails as
// SQLite's does.
type diskState struct {
	channels.State
	full   atomic.Bool
	failed atomic.Int64
	saves  atomic.Int64 // durable writes of a record that succeeded
	mu     sync.Mutex
	// promptGate, when set, holds every read of a prompt's record until it is closed;
	// promptRead is told of each.
	promptGate, promptRead chan struct{}
}

// ChannelState is the store's, held by promptGate for a prompt's record.
func (s *diskState) ChannelState(ctx context.Context, ch, acct, key string) (string, bool, error) {
	s.mu.Lock()
	gate, read := s.promptGate, s.promptRead
	s.mu.Unlock()
	if gate != nil && strings.HasPrefix(key, "prompt:") {
		read <- struct{}{}
		<-gate
	}
	return s.State.ChannelState(ctx, ch, acct, key)
}

func (s *diskState) SetChannelState(ctx context.Context, ch, acct, key, v string) error {
	if s.full.Load() {
		s.failed.Add(1)
		return errors.New("saving channel state: database or disk is full")
	}
	err := s.State.SetChannelState(ctx, ch, acct, key, v)
	if err == nil {
		s.saves.Add(1)
	}
	return err
}

// SetChannelStateWith keeps the store's save that takes its snapshot when it runs.
func (s *diskState) SetChannelStateWith(ctx context.Context, ch, acct, key string, lazy bool, value func() (string, error)) error {
	if s.full.Load() {
		s.failed.Add(1)
		return errors.New("saving channel state: database or disk is full")
	}
	ran := false // a save merged into a later one writes nothing itself
	err := s.State.SetChannelStateWith(ctx, ch, acct, key, lazy, func() (string, error) { ran = true; return value() })
	if !ran {
		return err
	}
	if err == nil && !lazy {
		s.saves.Add(1)
	}
	return err
}

// SetChannelStateLazy keeps the store's lazy save (the save after updates were handled):
// without it every such save was durable, as it is on no real store.
func (s *diskState) SetChannelStateLazy(ctx context.Context, ch, acct, key, v string) error {
	if s.full.Load() {
		s.failed.Add(1)
		return errors.New("saving channel state: database or disk is full")
	}
	return s.State.SetChannelStateLazy(ctx, ch, acct, key, v)
}

// hookEnv is the adapter in webhook mode behind a real httpserver.Server.
type hookEnv struct {
	*env
	srv    *httptest.Server
	disk   *diskState
	stamps channeltest.Stamps // when the server had its 200 out (benchmarks)
}

func newHookEnv(t testing.TB, mutate ...func(*env)) *hookEnv {
	h := &hookEnv{}
	h.env = newEnv(t, func(e *env) {
		e.cfg.Mode, e.cfg.WebhookSecret, e.cfg.PublicURL = ModeWebhook, hookSecret, "https://bot.example.test/"
		e.wrap = func(st channels.State) channels.State {
			h.disk = &diskState{State: st}
			return h.disk
		}
		for _, m := range mutate {
			m(e)
		}
	})
	srv := httpserver.New(httpserver.Config{}, nil, nil)
	h.Channel.RegisterHTTP(srv)
	h.srv = httptest.NewServer(h.stamps.Wrap(srv.Handler()))
	t.Cleanup(h.srv.Close)
	h.Eventually("the webhook registered", func() bool { return h.Channel.Ready() == nil })
	return h
}

// post sends body as Telegram does, with secret (none when ""), and returns the status
// and the body of the answer.
func (h *hookEnv) post(secret string, body []byte) (int, string) {
	h.TB.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+WebhookPath, strings.NewReader(string(body)))
	if err != nil {
		h.TB.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(secretHeader, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.TB.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// update builds a message update without queueing it for getUpdates.
func (h *hookEnv) update(chat int64, text string) (int64, []byte) {
	id := h.api.say(chat, alice, text)
	h.api.mu.Lock()
	h.api.queue = nil
	h.api.mu.Unlock()
	return id, h.api.rawUpdate(id)
}

// savedIDs lists the update ids the stored inbox knows (pending or recent).
func (h *hookEnv) savedIDs() []int64 {
	h.TB.Helper()
	v, ok, err := h.Store.ChannelState(context.Background(), Name, h.account(), inboxKey)
	if err != nil {
		h.TB.Fatal(err)
	}
	if !ok {
		return nil
	}
	var s savedInbox
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		h.TB.Fatal(err)
	}
	ids, err := s.recentIDs()
	if err != nil {
		h.TB.Fatal(err)
	}
	for _, raw := range s.Pending {
		id, _, _ := updateID(raw)
		ids = append(ids, id)
	}
	return ids
}

func TestWebhookRegistersAndAnswersOnce(t *testing.T) {
	h := newHookEnv(t)
	calls := h.api.callsOf("setWebhook")
	if len(calls) != 1 {
		t.Fatalf("setWebhook called %d times, want once", len(calls))
	}
	p := calls[0].Params
	if p["url"] != "https://bot.example.test/webhooks/telegram" || p["secret_token"] != hookSecret ||
		!strings.Contains(p["allowed_updates"], "callback_query") {
		t.Errorf("setWebhook got %v", p)
	}
	if n := len(h.api.callsOf("getUpdates")); n != 0 {
		t.Errorf("getUpdates called %d times in webhook mode", n)
	}
	var dropped []string
	var droppedMu sync.Mutex
	h.Channel.NoteInbound(func(outcome string) {
		droppedMu.Lock()
		defer droppedMu.Unlock()
		dropped = append(dropped, outcome)
	})
	id, body := h.update(private, "hello by webhook")
	if code, ans := h.post(hookSecret, body); code != http.StatusOK {
		t.Fatalf("POST = %d %s, want 200", code, ans)
	}
	if !slices.Contains(h.savedIDs(), id) {
		t.Errorf("update %d answered 200 but not in the stored inbox", id)
	}
	h.api.waitText(private, "ok")
	h.Idle()
	// Telegram delivers again an update whose 200 it did not see.
	if code, ans := h.post(hookSecret, body); code != http.StatusOK {
		t.Fatalf("redelivery = %d %s, want 200", code, ans)
	}
	h.Idle()
	if n := h.Model.CallCount(); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
	if n := countContaining(h.api.messages(private), "ok"); n != 1 {
		t.Errorf("the reply was sent %d times, want once", n)
	}
	droppedMu.Lock()
	defer droppedMu.Unlock()
	if !slices.Equal(dropped, []string{channels.InboundDuplicate}) {
		t.Errorf("dropped events reported %v, want the redelivery as one duplicate (for /metrics)", dropped)
	}
}

func TestWebhookRefusesForgedAndMalformed(t *testing.T) {
	h := newHookEnv(t)
	id, body := h.update(private, "forged")
	for _, c := range []struct {
		name, secret string
		body         []byte
		code         int
		reason       string
	}{
		{"no secret header", "", body, 401, "missing or wrong"},
		{"wrong secret", "hook-Secret_0123456788", body, 401, "missing or wrong"},
		{"secret prefix", hookSecret[:5], body, 401, "missing or wrong"},
		{"not JSON", hookSecret, []byte("update_id=1"), 400, "not a telegram update"},
		{"no update_id", hookSecret, []byte(`{"message":{}}`), 400, "not a telegram update"},
		{"update_id as string", hookSecret, []byte(`{"update_id":"5"}`), 400, "not a telegram update"},
		{"message of the wrong type", hookSecret, []byte(`{"update_id":77,"message":7}`), 400, "not a telegram update"},
	} {
		code, ans := h.post(c.secret, c.body)
		var got struct{ Error string }
		_ = json.Unmarshal([]byte(ans), &got)
		if code != c.code || !strings.Contains(got.Error, c.reason) || strings.Contains(got.Error, "\n") {
			t.Errorf("%s: %d %q, want %d with %q on one line", c.name, code, ans, c.code, c.reason)
		}
		if strings.Contains(ans, hookSecret) {
			t.Errorf("%s: the answer shows the secret", c.name)
		}
	}
	h.Idle()
	if ids := h.savedIDs(); slices.Contains(ids, id) || slices.Contains(ids, 77) {
		t.Errorf("a refused request was stored: %v", ids)
	}
	if n := h.Model.CallCount(); n != 0 {
		t.Errorf("a refused request reached the model (%d calls)", n)
	}
	if n := len(h.api.messages(private)); n != 0 {
		t.Errorf("a refused request was answered: %v", h.api.messages(private))
	}
}

func TestWebhookFullDiskAnswers503UntilSpaceReturns(t *testing.T) {
	h := newHookEnv(t)
	id, body := h.update(private, "disk full")
	h.disk.full.Store(true)
	for range 3 {
		if code, ans := h.post(hookSecret, body); code != http.StatusServiceUnavailable {
			t.Fatalf("POST on a full disk = %d %s, want 503", code, ans)
		}
	}
	err := h.Channel.Ready()
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Errorf("Ready() = %v, want the full disk named", err)
	}
	if n := h.Model.CallCount(); n != 0 {
		t.Errorf("an update that was not stored was handled (%d model calls)", n)
	}
	if n := strings.Count(h.Logs.String(), "saving the update inbox failed"); n != 1 {
		t.Errorf("the failure was logged %d times in a minute, want once", n)
	}
	h.disk.full.Store(false)
	if code, ans := h.post(hookSecret, body); code != http.StatusOK {
		t.Fatalf("POST once space returned = %d %s, want 200", code, ans)
	}
	if err := h.Channel.Ready(); err != nil {
		t.Errorf("Ready() = %v after a save succeeded", err)
	}
	h.api.waitText(private, "ok")
	h.Idle()
	if n := h.Model.CallCount(); n != 1 {
		t.Errorf("update %d reached the model %d times, want once", id, n)
	}
	if n := countContaining(h.api.messages(private), "ok"); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
}

func TestWebhookOutOfOrderUpdatesAreAllHandled(t *testing.T) {
	h := newHookEnv(t)
	var bodies [][]byte
	for i := range 4 {
		_, b := h.update(private+int64(i), "n"+strconv.Itoa(i))
		bodies = append(bodies, b)
	}
	for _, i := range []int{3, 1, 0, 2} { // a later update first, as concurrent deliveries do
		if code, ans := h.post(hookSecret, bodies[i]); code != http.StatusOK {
			t.Fatalf("POST %d = %d %s", i, code, ans)
		}
	}
	for i := range 4 {
		h.api.waitText(private+int64(i), "ok")
	}
	h.Idle()
	if n := h.Model.CallCount(); n != 4 {
		t.Errorf("the model was called %d times for 4 updates", n)
	}
}

// The 200 is whole, and the connection free, while the update's hand-over still waits
// (here for the store's read of the prompt it may answer); a later update is handed
// over after it.
func TestWebhookAnswersWithoutWaitingForTheHandOver(t *testing.T) {
	h := newHookEnv(t, func(e *env) { e.Model.Echo("re: ") })
	_, first := h.update(private, "first")
	if code, ans := h.post(hookSecret, first); code != http.StatusOK {
		t.Fatalf("POST = %d %s", code, ans)
	}
	shown := h.api.waitText(private, "re: first")
	h.Idle()
	gate := make(chan struct{})
	h.disk.mu.Lock()
	h.disk.promptGate, h.disk.promptRead = gate, make(chan struct{}, 1)
	h.disk.mu.Unlock()
	id := h.api.say(private, alice, "a reply to the bot", replyTo(shown.ID))
	h.api.mu.Lock()
	h.api.queue = nil
	h.api.mu.Unlock()
	answered := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+WebhookPath, strings.NewReader(string(h.api.rawUpdate(id))))
		req.Header.Set(secretHeader, hookSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(answered)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body) // to its end: a chunked answer ends after the hand-over
		resp.Body.Close()
		answered <- resp
	}()
	<-h.disk.promptRead // the hand-over is held
	var resp *http.Response
	select {
	case resp = <-answered:
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing
		close(gate)
		t.Fatal("the 200 waited for the update's hand-over")
	}
	if resp == nil {
		t.Fatal("no answer")
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength != 0 || len(resp.TransferEncoding) != 0 {
		t.Errorf("answered %d, Content-Length %d, Transfer-Encoding %v; want 200 with an empty body of known length",
			resp.StatusCode, resp.ContentLength, resp.TransferEncoding)
	}
	_, later := h.update(private, "later")
	if code, ans := h.post(hookSecret, later); code != http.StatusOK {
		t.Fatalf("POST while a hand-over is held = %d %s", code, ans)
	}
	close(gate)
	h.api.waitText(private, "re: later")
	h.Idle()
	var texts []string
	for _, m := range h.api.messages(private) {
		if strings.HasPrefix(m.Text, "re: ") {
			texts = append(texts, m.Text)
		}
	}
	if want := []string{"re: first", "re: a reply to the bot", "re: later"}; !slices.Equal(texts, want) {
		t.Errorf("replies %q, want %q (handed over in the order answered)", texts, want)
	}
}

func TestPollingDeletesAWebhookFirst(t *testing.T) {
	e := newEnv(t)
	e.api.say(private, alice, "hi")
	e.api.waitText(private, "ok")
	del, polls := e.api.callsOf("deleteWebhook"), e.api.callsOf("getUpdates")
	if len(del) != 1 || len(polls) == 0 {
		t.Fatalf("deleteWebhook %d, getUpdates %d calls", len(del), len(polls))
	}
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	first := slices.IndexFunc(e.api.calls, func(c apiCall) bool { return c.Method == "getUpdates" })
	if slices.IndexFunc(e.api.calls, func(c apiCall) bool { return c.Method == "deleteWebhook" }) > first {
		t.Error("getUpdates was called before deleteWebhook")
	}
}

// Before Run has loaded the inbox the route answers 503 (Telegram retries) and Ready says
// the bot is not started; in polling mode nothing is registered.
func TestWebhookBeforeRunAnd503(t *testing.T) {
	f := newFakeAPI(t)
	cfg := Config{Token: f.token, APIURL: f.URL(), PollTimeout: time.Second, Mode: ModeWebhook, WebhookSecret: hookSecret, PublicURL: "https://x.test"}
	c, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("Ready() before Run = %v", err)
	}
	srv := httpserver.New(httpserver.Config{}, nil, nil)
	c.RegisterHTTP(srv)
	req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`{"update_id":5}`))
	req.Header.Set(secretHeader, hookSecret)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("POST before Run = %d, want 503", rec.Code)
	}
	cfg.Mode = ModePolling
	p, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httpserver.New(httpserver.Config{}, nil, nil)
	p.RegisterHTTP(srv2)
	rec = httptest.NewRecorder()
	srv2.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`{}`)))
	if rec.Code != http.StatusNotFound {
		t.Errorf("polling mode registered the webhook route: %d", rec.Code)
	}
	// A webhook without http.public_url cannot start.
	cfg.Mode, cfg.PublicURL = ModeWebhook, ""
	w, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background(), channels.HandlerFunc(func(context.Context, core.Message) error { return nil })); err == nil || !strings.Contains(err.Error(), "http.public_url is not set") {
		t.Errorf("Run without public_url = %v", err)
	}
}

// A running webhook adapter adopts the inbox another replica left: the updates it held
// (one also pending here) are saved in this inbox before AdoptInbox returns, answered once
// each, and adopting the record again (a crash before its deletion) answers nothing more.
// While the store refuses the save nothing is adopted, and nothing handled.
func TestWebhookAdoptsAnotherReplicasInbox(t *testing.T) {
	h := newHookEnv(t)
	ctx := context.Background()
	var raws []json.RawMessage
	var ids []int64
	for i := range 3 {
		id, b := h.update(private+int64(i), "left "+strconv.Itoa(i))
		raws, ids = append(raws, b), append(ids, id)
	}
	saved, err := json.Marshal(savedInbox{Pending: raws})
	if err != nil {
		t.Fatal(err)
	}
	h.disk.full.Store(true)
	if n, err := h.Channel.AdoptInbox(ctx, string(saved)); err == nil || n != 0 {
		t.Fatalf("AdoptInbox on a full disk = %d, %v; want an error", n, err)
	}
	h.disk.full.Store(false)
	if code, ans := h.post(hookSecret, raws[2]); code != http.StatusOK { // delivered here too
		t.Fatalf("POST = %d %s", code, ans)
	}
	h.api.waitText(private+2, "ok")
	n, err := h.Channel.AdoptInbox(ctx, string(saved))
	if err != nil || n != 2 {
		t.Fatalf("AdoptInbox = %d, %v; want the 2 updates not received here", n, err)
	}
	if got := h.savedIDs(); !slices.Contains(got, ids[0]) || !slices.Contains(got, ids[1]) {
		t.Errorf("the stored inbox knows %v after AdoptInbox returned, want %v among them", got, ids[:2])
	}
	for i := range 3 {
		h.api.waitText(private+int64(i), "ok")
	}
	h.Idle()
	if n, err := h.Channel.AdoptInbox(ctx, string(saved)); err != nil || n != 0 {
		t.Errorf("adopting the record again = %d, %v; want nothing new", n, err)
	}
	if n, err := h.Channel.AdoptInbox(ctx, "{damaged"); err != nil || n != 0 {
		t.Errorf("adopting a damaged record = %d, %v; want it dropped", n, err)
	}
	h.Idle()
	for i := range 3 {
		if n := countContaining(h.api.messages(private+int64(i)), "ok"); n != 1 {
			t.Errorf("chat %d answered %d times, want once", i, n)
		}
	}
	if n := h.Model.CallCount(); n != 3 {
		t.Errorf("the model was called %d times for 3 updates", n)
	}
}

// Before Run (or after it) there is no inbox to adopt into: the record must stay.
func TestAdoptInboxBeforeRun(t *testing.T) {
	c := &Channel{}
	if _, err := c.AdoptInbox(context.Background(), `{"pending":[]}`); !errors.Is(err, channels.ErrNotReceiving) {
		t.Errorf("AdoptInbox without Run = %v, want ErrNotReceiving", err)
	}
}
