package discord

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

// testTuning keeps Discord's rules but not its patience.
func testTuning() tuning {
	return tuning{
		retry:   channels.Patience{Attempts: 3, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, AttemptTime: 5 * time.Second},
		ackTime: 2500 * time.Millisecond, ackWait: 5 * time.Second, storeWait: 1500 * time.Millisecond,
		reconnectMin: 10 * time.Millisecond, reconnectMax: 50 * time.Millisecond,
	}
}

var (
	alice = user{id: "111", name: "alice"} // the approver
	bob   = user{id: "222", name: "bob"}
)

// env is the adapter against the fake Discord, in the shared harness (a real engine on
// a real store).
type env struct {
	*channeltest.Env[*Channel]
	fd   *fakeDiscord
	cfg  Config
	hook *ixSender // interactions http: how the fake delivers interactions
}

// overHTTP makes every newEnv use interactions http, the fake posting signed
// interactions to a real httpserver.Server: the gateway tests, run again by
// TestHTTPInteractionsBehaveAsGateway.
var overHTTP bool

// httpInteractions is a newEnv option: interactions http with the test key.
func httpInteractions(e *env) {
	e.cfg.Interactions, e.cfg.PublicKey = InteractionsHTTP, testPublicKey()
}

func newEnv(t *testing.T, mutate ...func(*env)) *env {
	t.Helper()
	e := &env{fd: newFakeDiscord(t)}
	e.Env = channeltest.NewEnv(t, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		return newChannel(ctx, e.cfg, st, log, testTuning())
	}, e.fd.token, "-secret")
	e.cfg = Config{Token: e.fd.token, APIURL: e.fd.URL(), GuildIDs: []string{"G1"}}
	e.Core.Approvers = []string{"discord:" + alice.id}
	if overHTTP {
		mutate = append([]func(*env){httpInteractions}, mutate...)
	}
	for _, m := range mutate {
		m(e)
	}
	e.Start()
	e.fd.waitFor("the gateway session", e.fd.connected)
	if e.cfg.Interactions == InteractionsHTTP {
		srv := httpserver.New(httpserver.Config{}, nil, nil)
		e.Channel.RegisterHTTP(srv)
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		e.hook = newIxSender(hs.URL+InteractionsPath, e.cfg.Now)
		t.Cleanup(e.hook.wg.Wait)
		e.fd.mu.Lock()
		e.fd.hook = e.hook
		e.fd.mu.Unlock()
	}
	e.Eventually("Ready", func() bool { return e.Channel.Ready() == nil })
	return e
}

func addr(chat, thread string) core.Address {
	a := core.Address{Channel: Name, Chat: chat, Thread: thread}
	if chat != "D1" {
		a.Account = "G1"
	}
	return a
}

func sid(chat string) string { return addr(chat, "").SessionID() }

// waitPhase waits until the session of chat is in phase p.
func (e *env) waitPhase(chat string, p core.Phase) core.Session {
	e.TB.Helper()
	return e.WaitPhase(sid(chat), p)
}

// waitPlan waits for a message with a file matching pattern in channel.
func (e *env) waitPlan(channel, file string) shownMsg {
	e.TB.Helper()
	var found shownMsg
	e.fd.waitFor("a message with "+file, func() bool {
		for _, m := range e.fd.shown(channel) {
			for _, f := range m.Files {
				if strings.Contains(f.Name, file) {
					found = m
					return true
				}
			}
		}
		return false
	})
	return found
}

// waitCallback waits for the callback of interaction id.
func (e *env) waitCallback(id string) callback {
	e.TB.Helper()
	var cb callback
	e.fd.waitFor("the callback of interaction "+id, func() bool {
		cbs := e.fd.callbacksOf(id)
		if len(cbs) > 0 {
			cb = cbs[0]
		}
		return len(cbs) > 0
	})
	return cb
}

// followups returns the webhook messages of interaction id.
func (e *env) followups(id string) []shownMsg {
	var out []shownMsg
	for _, m := range e.fd.all() {
		if m.Interaction == id {
			out = append(out, m)
		}
	}
	return out
}
