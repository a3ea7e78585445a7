package discord

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// The gateway tests of commands, buttons and the Revise modal, run again with the fake
// posting interactions to the interactions endpoint: one inbound path, two transports.
func TestHTTPInteractionsBehaveAsGateway(t *testing.T) {
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"mention, plan, accept", TestMentionPlanAcceptToCompletion},
		{"revise as a command", TestReviseAsApplicationCommand},
		{"revise button opens the modal", TestReviseButtonOpensModal},
		{"stale and foreign buttons", TestStaleAndForeignButtons},
		{"non-approver", TestNonApprover},
		{"question option buttons", TestQuestionOptionButtons},
		{"show resends the plan", TestShowCommandResendsPlanAndDecisionRetiresBoth},
	} {
		t.Run(c.name, func(t *testing.T) {
			overHTTP = true
			defer func() { overHTTP = false }()
			c.test(t)
		})
	}
}

// interaction is a /plan status command as Discord posts it.
func (e *env) interactionBody(id string) []byte {
	body, _ := json.Marshal(map[string]any{
		"id": id, "application_id": e.fd.appID, "type": 2, "token": "itok-" + id + "-secret", "version": 1,
		"channel_id": "C1", "guild_id": "G1", "member": map[string]any{"user": alice.json()},
		"data": map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{map[string]any{"name": "status", "type": 1}}},
	})
	return body
}

func TestHTTPForgedInteractionsAre401(t *testing.T) {
	e := newEnv(t, httpInteractions)
	_, other, _ := ed25519.GenerateKey(nil)
	body := e.interactionBody("1234567890")
	ts := e.hook.ts()
	tampered := []byte(strings.Replace(string(body), "status", "accept", 1))
	for _, c := range []struct {
		name    string
		sig, ts string
		send    []byte
	}{
		{"another key", discordSign(other, ts, body), ts, body},
		{"tampered after signing", discordSign(testKey, ts, body), ts, tampered},
		{"signed for another timestamp", discordSign(testKey, ts, body), "1" + ts, body},
		{"no signature", "", ts, body},
		{"no timestamp", discordSign(testKey, ts, body), "", body},
		{"signature not hex", "zz" + discordSign(testKey, ts, body)[2:], ts, body},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.hook.url, strings.NewReader(string(c.send)))
		if c.sig != "" {
			req.Header.Set("X-Signature-Ed25519", c.sig)
		}
		if c.ts != "" {
			req.Header.Set("X-Signature-Timestamp", c.ts)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", c.name, resp.StatusCode)
		}
	}
	e.Idle()
	if n := len(e.fd.callbacksOf("1234567890")); n != 0 || len(e.fd.all()) != 0 {
		t.Errorf("a forged interaction was answered: %d callbacks, messages %v", n, contents(e.fd.all()))
	}
	if n := e.Model.CallCount(); n != 0 {
		t.Errorf("a forged interaction reached the model")
	}
	if ss, err := e.Store.Sessions(t.Context()); err != nil || len(ss) != 0 {
		t.Errorf("a forged interaction made sessions: %v (%v)", ss, err)
	}
}

// A request signed with the application's key but with a timestamp more than five minutes
// from the adapter's clock (a captured request sent again) is refused before anything is
// saved; one inside the window is taken.
func TestHTTPStaleTimestampsAre401(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, func(e *env) {
		e.cfg.Now = clk.now
		httpInteractions(e)
	})
	unix := func(d time.Duration) string { return strconv.FormatInt(clk.now().Add(d).Unix(), 10) }
	for i, ts := range []string{"978307200", unix(-5*time.Minute - 2*time.Second), unix(5*time.Minute + 2*time.Second), "soon"} {
		id := "55500000" + strconv.Itoa(i)
		code, ans, err := e.hook.post(e.interactionBody(id), ts, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("signed at %s (the clock says %d): %d %s, want 401", ts, clk.now().Unix(), code, ans)
		}
		if seen, err := e.Store.SeenInbound(t.Context(), core.InboundKey{Channel: Name, Account: "G1", EventID: id}); err != nil || seen {
			t.Errorf("the stale interaction %s was committed (%v)", id, err)
		}
	}
	e.Idle()
	if v, _, err := e.Store.ChannelState(t.Context(), Name, e.fd.botID, inboxKey); err != nil || strings.Contains(v, "55500000") {
		t.Errorf("a stale interaction is in the inbox on disk: %q (%v)", v, err)
	}
	if ss, err := e.Store.Sessions(t.Context()); err != nil || len(ss) != 0 || len(e.fd.all()) != 0 {
		t.Errorf("a stale interaction made sessions %v (%v) or messages %v", ss, err, contents(e.fd.all()))
	}

	// Four minutes late is inside the window: taken and answered.
	if code, ans, err := e.hook.post(e.interactionBody("5550000099"), unix(-4*time.Minute), testKey); err != nil || code != http.StatusOK {
		t.Fatalf("signed four minutes ago: %d %s (%v), want 200", code, ans, err)
	}
	e.Eventually("the in-window interaction committed", func() bool {
		seen, _ := e.Store.SeenInbound(t.Context(), core.InboundKey{Channel: Name, Account: "G1", EventID: "5550000099"})
		return seen
	})
}

func TestHTTPPingAndBadBodies(t *testing.T) {
	e := newEnv(t, httpInteractions)
	ts := e.hook.ts()
	code, ans, err := e.hook.post([]byte(`{"id":"1","application_id":"900","type":1,"token":"t","version":1}`), ts, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || strings.TrimSpace(ans) != `{"type":1}` {
		t.Errorf("PING answered %d %s, want 200 {\"type\":1}", code, ans)
	}
	for _, body := range []string{`{"type":`, `[]`, `{"id":"5"}`, `{"id":"6","type":2}`, `{"id":"7","type":"two"}`} {
		code, ans, err := e.hook.post([]byte(body), ts, testKey)
		if err != nil {
			t.Fatal(err)
		}
		var why struct{ Error string }
		_ = json.Unmarshal([]byte(ans), &why)
		if code != http.StatusBadRequest || why.Error == "" || strings.Contains(why.Error, "\n") {
			t.Errorf("%s: %d %s, want 400 with a one-line reason", body, code, ans)
		}
	}
}

// A command gets its deferred response in the HTTP answer while the model is still
// blocked; the outcome follows through the webhook API once it is released.
func TestHTTPDeferredWhileTheAgentIsBusy(t *testing.T) {
	e := newEnv(t, httpInteractions)
	block := make(chan struct{})
	e.Model.Block(block)
	e.fd.say("C1", alice, "<@900> a long job", true) // the session's turn, blocked
	id := e.fd.command("C1", alice, "status", "", "")
	if cb := e.waitCallback(id); cb.Type != 5 {
		t.Errorf("the command was answered with type %d, want 5 (deferred)", cb.Type)
	}
	if n := e.Model.Finished(); n != 0 {
		t.Fatalf("the model finished %d calls before the deferred answer; it was meant to be blocked", n)
	}
	if code := e.hook.statusOf(id); code != http.StatusOK {
		t.Errorf("the interaction request answered %d", code)
	}
	close(block)
	e.fd.waitFor("the deferred answer edited", func() bool {
		f := e.followups(id)
		return len(f) == 1 && f[0].Content != "(thinking)" && f[0].Edits > 0
	})
	e.Idle()
}

// Ready names what is missing before Run: the gateway, and with interactions http the
// endpoint; an interaction request then gets 503.
func TestReadyBeforeRun(t *testing.T) {
	fd := newFakeDiscord(t)
	c, err := newChannel(t.Context(), Config{Token: fd.token, APIURL: fd.URL(), Interactions: InteractionsHTTP, PublicKey: testPublicKey()}, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	err = c.Ready()
	if err == nil || !strings.Contains(err.Error(), "gateway not connected") || !strings.Contains(err.Error(), "interactions endpoint") {
		t.Errorf("Ready() before Run = %v", err)
	}
	srv := httpserver.New(httpserver.Config{}, nil, nil)
	c.RegisterHTTP(srv)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	body := []byte(`{"id":"3","type":2,"token":"t","data":{"name":"plan"}}`)
	code, _, err := newIxSender(hs.URL+InteractionsPath, nil).post(body, strconv.FormatInt(time.Now().Unix(), 10), testKey)
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("an interaction before Run = %d (%v), want 503", code, err)
	}
	if _, err := newChannel(t.Context(), Config{Token: fd.token, APIURL: fd.URL(), Interactions: InteractionsHTTP, PublicKey: "abc"}, &channeltest.MemState{}, nil, testTuning()); err == nil {
		t.Error("a channel with a bad public key started")
	}
}
