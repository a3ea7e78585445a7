package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/httpserver"
)

// The Socket Mode tests of buttons, modals, files, slash commands and retries, run again
// with the fake delivering over HTTP: one inbound path, two transports.
func TestHTTPModeBehavesAsSocketMode(t *testing.T) {
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"mention, plan file, accept", TestMentionPlanAcceptToCompletion},
		{"direct messages", TestDirectMessageThreads},
		{"slash revise", TestSlashRevise},
		{"slash at top level", TestSlashTopLevel},
		{"revise modal", TestReviseModal},
		{"stale button", TestStaleButton},
		{"question buttons", TestQuestionButtons},
		{"retried event", TestRetriedEventHandledOnce},
		{"long reply as file", TestLongReplyAsFile},
		{"allowed channels", TestAllowedChannels},
	} {
		t.Run(c.name, func(t *testing.T) {
			overHTTP = true
			defer func() { overHTTP = false }()
			c.test(t)
		})
	}
}

// storedKeys are the keys of the saved inbox.
func (e *env) storedKeys() []string {
	e.TB.Helper()
	in, err := channels.LoadInbox(context.Background(), e.Store, Name, e.api.team)
	if err != nil {
		e.TB.Fatal(err)
	}
	var keys []string
	for _, p := range in.Pending() {
		keys = append(keys, p.Key)
	}
	return keys
}

func TestHTTPForgedRequestsAre401AndStoreNothing(t *testing.T) {
	e := newEnv(t, httpMode)
	now := time.Now().Unix()
	fresh := strconv.FormatInt(now, 10)
	for _, kind := range []string{"events_api", "slash_commands", "interactive"} {
		payload := map[string]any{
			"events_api":     e.api.eventCallback("EvFORGED", map[string]any{"type": "app_mention", "user": alice, "text": "<@UBOT> hi", "ts": "1700000001.000100", "channel": general, "event_ts": "1700000001.000100"}),
			"slash_commands": map[string]any{"command": "/plan", "text": "status", "channel_id": general, "user_id": alice, "team_id": e.api.team, "trigger_id": "trig-forged"},
			"interactive":    map[string]any{"type": "block_actions", "trigger_id": "trig-forged-click", "user": map[string]any{"id": alice}, "channel": map[string]any{"id": general}, "actions": []any{}},
		}[kind]
		path, ctype, body := slackRequest(kind, payload)
		for _, c := range []struct {
			name       string
			sig, ts    string
			sendBody   []byte
			skipSig    bool
			skipTS     bool
			wantReason string
		}{
			{name: "wrong secret", sig: channeltest.SlackSignature("not-the-secret", fresh, body), ts: fresh, sendBody: body},
			{name: "10 minutes old", sig: channeltest.SlackSignature(testSigningSecret, strconv.FormatInt(now-600, 10), body), ts: strconv.FormatInt(now-600, 10), sendBody: body},
			{name: "tampered after signing", sig: channeltest.SlackSignature(testSigningSecret, fresh, body), ts: fresh, sendBody: append([]byte(nil), append(body[:len(body)-1:len(body)-1], ' ', body[len(body)-1])...)},
			{name: "no signature", ts: fresh, sendBody: body, skipSig: true},
			{name: "no timestamp", sig: channeltest.SlackSignature(testSigningSecret, fresh, body), sendBody: body, skipTS: true},
			{name: "signed for another timestamp", sig: channeltest.SlackSignature(testSigningSecret, strconv.FormatInt(now-1, 10), body), ts: fresh, sendBody: body},
		} {
			req, _ := http.NewRequest(http.MethodPost, e.hook.base+path, strings.NewReader(string(c.sendBody)))
			req.Header.Set("Content-Type", ctype)
			if !c.skipTS {
				req.Header.Set("X-Slack-Request-Timestamp", c.ts)
			}
			if !c.skipSig {
				req.Header.Set("X-Slack-Signature", c.sig)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var ans struct{ Error string }
			_ = json.NewDecoder(resp.Body).Decode(&ans)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s: %d %q, want 401", kind, c.name, resp.StatusCode, ans.Error)
			}
			if strings.Contains(ans.Error, testSigningSecret) {
				t.Errorf("%s %s: the answer shows the secret", kind, c.name)
			}
		}
	}
	e.Idle()
	if keys := e.storedKeys(); len(keys) != 0 {
		t.Errorf("forged requests were stored: %v", keys)
	}
	if n := e.Model.CallCount(); n != 0 {
		t.Errorf("a forged request reached the model (%d calls)", n)
	}
	if msgs := e.api.messages(general); len(msgs) != 0 {
		t.Errorf("a forged request was answered: %v", msgs)
	}
}

func TestHTTPURLVerificationAndBadBodies(t *testing.T) {
	e := newEnv(t, httpMode)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	code, ans, err := e.hook.post(EventsPath, "application/json", body, ts, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Challenge string }
	if json.Unmarshal([]byte(ans), &got) != nil || code != 200 || got.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification: %d %s", code, ans)
	}
	for _, c := range []struct{ path, ctype, body string }{
		{EventsPath, "application/json", `{"type":`},
		{EventsPath, "application/json", `{"type":"event_callback","event":7}`},
		{CommandsPath, "application/x-www-form-urlencoded", "text=no+command"},
		{InteractivityPath, "application/x-www-form-urlencoded", "payload=%7Bnot+json"},
		{InteractivityPath, "application/x-www-form-urlencoded", "nothing=here"},
	} {
		code, ans, err := e.hook.post(c.path, c.ctype, []byte(c.body), ts, 0)
		if err != nil {
			t.Fatal(err)
		}
		var why struct{ Error string }
		_ = json.Unmarshal([]byte(ans), &why)
		if code != http.StatusBadRequest || why.Error == "" || strings.Contains(why.Error, "\n") {
			t.Errorf("%s %q: %d %q, want 400 with a one-line reason", c.path, c.body, code, ans)
		}
	}
	if keys := e.storedKeys(); len(keys) != 0 {
		t.Errorf("bad bodies were stored: %v", keys)
	}
}

// The 200 goes out once the event is committed, while the agent is still busy with the
// turn: the model is blocked until after both answers arrived.
func TestHTTPAnswersWhileTheAgentIsBusy(t *testing.T) {
	e := newEnv(t, httpMode)
	block := make(chan struct{})
	e.Model.Block(block)
	first := e.api.mention(general, alice, "a long job", "")
	e.api.waitAck(first.Envelope)
	second := e.api.mention(general, alice, "and another", first.TS)
	e.api.waitAck(second.Envelope)
	if n := e.Model.Finished(); n != 0 {
		t.Fatalf("the model finished %d calls before the 200s; it was meant to be blocked", n)
	}
	for _, s := range []said{first, second} {
		if code := e.hook.statusOf(s.Envelope); code != http.StatusOK {
			t.Errorf("envelope %s answered %d, want 200", s.Envelope, code)
		}
	}
	if keys := e.storedKeys(); len(keys) == 0 {
		t.Error("the answered events are not in the stored inbox")
	}
	close(block)
	e.api.waitText(general, "ok")
	e.Idle()
}

// A retry of a committed event (X-Slack-Retry-Num) is answered and not handled again,
// whether the first delivery is still waiting or already answered.
func TestHTTPRetryOfACommittedEventHandledOnce(t *testing.T) {
	e := newEnv(t, httpMode)
	block := make(chan struct{})
	e.Model.Block(block)
	ts := e.api.userTS()
	inner := map[string]any{"type": "app_mention", "user": alice, "text": "<@UBOT> once", "ts": ts, "channel": general, "event_ts": ts}
	e.api.waitAck(e.api.resend("EvONCE", inner, 0))
	e.api.waitAck(e.api.resend("EvONCE", inner, 1)) // waiting behind the blocked model
	close(block)
	e.api.waitText(general, "ok")
	e.Idle()
	e.api.waitAck(e.api.resend("EvONCE", inner, 2)) // after the answer
	e.Idle()
	if n := e.Model.CallCount(); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
	if n := len(e.api.messages(general)); n != 1 {
		t.Errorf("%d messages posted, want one answer", n)
	}
}

type fullDisk struct {
	channels.State
	full atomic.Bool
}

func (s *fullDisk) SetChannelState(ctx context.Context, ch, acct, key, v string) error {
	if s.full.Load() && key == "inbox" {
		return errors.New("saving channel state: database or disk is full")
	}
	return s.State.SetChannelState(ctx, ch, acct, key, v)
}

func (s *fullDisk) SetChannelStateLazy(ctx context.Context, ch, acct, key, v string) error {
	if s.full.Load() && key == "inbox" {
		return errors.New("saving channel state: database or disk is full")
	}
	return s.State.SetChannelStateLazy(ctx, ch, acct, key, v)
}

func (s *fullDisk) SetChannelStateWith(ctx context.Context, ch, acct, key string, lazy bool, value func() (string, error)) error {
	if s.full.Load() && key == "inbox" {
		return errors.New("saving channel state: database or disk is full")
	}
	return s.State.SetChannelStateWith(ctx, ch, acct, key, lazy, value)
}

func TestHTTPFullDiskAnswers503AndRecovers(t *testing.T) {
	disk := &fullDisk{}
	e := newEnv(t, httpMode, func(e *env) {
		e.wrap = func(st channels.State) channels.State { disk.State = st; return disk }
	})
	disk.full.Store(true)
	ts := e.api.userTS()
	inner := map[string]any{"type": "app_mention", "user": alice, "text": "<@UBOT> full", "ts": ts, "channel": general, "event_ts": ts}
	env := e.api.resend("EvFULL", inner, 0)
	e.api.waitFor("the answer to the first delivery", func() bool { return e.hook.statusOf(env) != 0 })
	if code := e.hook.statusOf(env); code != http.StatusServiceUnavailable {
		t.Fatalf("a delivery on a full disk answered %d, want 503", code)
	}
	retry := e.api.resend("EvFULL", inner, 1)
	e.api.waitFor("the answer to the retry", func() bool { return e.hook.statusOf(retry) != 0 })
	if code := e.hook.statusOf(retry); code != http.StatusServiceUnavailable {
		t.Fatalf("a retry on a full disk answered %d, want 503", code)
	}
	err := e.Channel.Ready()
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Errorf("Ready() = %v, want the full disk named", err)
	}
	if n := e.Model.CallCount(); n != 0 {
		t.Errorf("an event that was not stored reached the model")
	}
	disk.full.Store(false)
	e.api.waitAck(e.api.resend("EvFULL", inner, 2))
	if err := e.Channel.Ready(); err != nil {
		t.Errorf("Ready() = %v once storing works", err)
	}
	e.api.waitText(general, "ok")
	e.Idle()
	if n := strings.Count(e.Logs.String(), "storing slack envelopes failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	if n := len(e.api.messages(general)); n != 1 {
		t.Errorf("%d answers, want one", n)
	}
}

// Ready is nil once Socket Mode is connected; before Run it says so, and in mode http the
// routes answer 503 until Run takes requests.
func TestReadyAndBeforeRun(t *testing.T) {
	e := newEnv(t)
	e.Eventually("Socket Mode connected", func() bool { return e.Channel.Ready() == nil })
	cfg := Config{BotToken: e.api.botToken, APIURL: e.api.URL(), Mode: ModeHTTP, SigningSecret: testSigningSecret}
	c, err := newChannel(t.Context(), cfg, e.Store, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("Ready() before Run = %v", err)
	}
	srv := httpserver.New(httpserver.Config{}, nil, nil)
	c.RegisterHTTP(srv)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	_, ctype, body := slackRequest("events_api", e.api.eventCallback("EvEARLY", map[string]any{"type": "app_mention", "user": alice, "text": "<@UBOT> early", "ts": "1700000002.000100", "channel": general}))
	code, _, err := newHookSender(hs.URL, testSigningSecret).post(EventsPath, ctype, body, strconv.FormatInt(time.Now().Unix(), 10), 0)
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("an event before Run = %d (%v), want 503", code, err)
	}
	cfg.SigningSecret = ""
	if _, err := newChannel(t.Context(), cfg, e.Store, nil, testTuning()); err == nil {
		t.Error("mode http started without a signing secret")
	}
}
