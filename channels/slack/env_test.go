package slack

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// testTuning keeps Slack's rules but not its patience: no pacing, Retry-After counted in
// tens of milliseconds, short backoff, a fast ping check.
func testTuning() tuning {
	return tuning{
		burst: 1, retryUnit: 10 * time.Millisecond, retry: channels.Patience{Attempts: 5, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, AttemptTime: 5 * time.Second},

		pingInterval: 2 * time.Second, seenFor: time.Hour,
	}
}

// env is the adapter against the fake Slack, in the shared harness (a real engine on a
// real store).
type env struct {
	*channeltest.Env[*Channel]
	api *fakeSlack
	cfg Config
	// wrap, when set, is put between the adapter and the store (a full disk, say).
	wrap func(channels.State) channels.State
	hook *hookSender // mode http: how the fake delivers
	// stamps: when the server had each benchmark request's 200 out
	stamps channeltest.Stamps
}

// overHTTP makes every newEnv run in mode http, its fake delivering envelopes as signed
// requests through a real httpserver.Server: the Socket Mode tests, run again by
// TestHTTPModeBehavesAsSocketMode.
var overHTTP bool

// httpMode is a newEnv option: mode http with the test signing secret.
func httpMode(e *env) {
	e.cfg.Mode, e.cfg.SigningSecret, e.cfg.AppToken = ModeHTTP, testSigningSecret, ""
}

func newEnv(t testing.TB, mutate ...func(*env)) *env {
	t.Helper()
	e := &env{api: newFakeSlack(t)}
	e.Env = channeltest.NewEnv(t, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		if e.wrap != nil {
			st = e.wrap(st)
		}
		return newChannel(ctx, e.cfg, st, log, testTuning())
	}, e.api.botToken, e.api.appToken, "SECRETbot", "SECRETapp", testSigningSecret)
	e.Describe = e.api.describeCalls
	e.cfg = Config{BotToken: e.api.botToken, AppToken: e.api.appToken, APIURL: e.api.URL()}
	if overHTTP {
		mutate = append([]func(*env){httpMode}, mutate...)
	}
	for _, m := range mutate {
		m(e)
	}
	e.Start()
	if e.cfg.Mode == ModeHTTP {
		srv := httpserver.New(httpserver.Config{}, nil, nil)
		e.Channel.RegisterHTTP(srv)
		hs := httptest.NewServer(e.stamps.Wrap(srv.Handler()))
		t.Cleanup(hs.Close)
		e.hook = newHookSender(hs.URL, testSigningSecret)
		t.Cleanup(e.hook.wg.Wait)
		e.api.mu.Lock()
		e.api.hook = e.hook
		e.api.mu.Unlock()
		e.Eventually("mode http taking requests", func() bool { return e.Channel.Ready() == nil })
	}
	return e
}

// assertNoTokens fails the test if a token appears in text.
func assertNoTokens(t testing.TB, api *fakeSlack, text string) {
	t.Helper()
	for _, tok := range []string{api.botToken, api.appToken, "SECRETbot", "SECRETapp"} {
		if strings.Contains(text, tok) {
			t.Errorf("a token (%s…) appears in the log or error", tok[:6])
		}
	}
}

func (e *env) addr(ch, thread string) core.Address {
	return core.Address{Channel: Name, Account: e.api.team, Chat: ch, Thread: thread}
}

func (e *env) sid(ch, thread string) string { return e.addr(ch, thread).SessionID() }

// waitPhase waits until the session of ch/thread is in phase p.
func (e *env) waitPhase(ch, thread string, p core.Phase) core.Session {
	e.TB.Helper()
	return e.WaitPhase(e.sid(ch, thread), p)
}
