package telegram

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"testing"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// testTuning keeps Telegram's rules but not its patience: no pacing, retry_after counted
// in milliseconds, short backoff.
func testTuning() tuning {
	return tuning{
		burst: 1, retryUnit: 10 * time.Millisecond, retry: channels.Patience{Attempts: 5, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, AttemptTime: 5 * time.Second},

		toastWait: 5 * time.Second, holdAfterErr: 5 * time.Millisecond, flushDelay: 20 * time.Millisecond, flushLocal: 20 * time.Millisecond,
	}
}

// env is the adapter against the fake Bot API, in the shared harness (a real engine on a
// real store).
type env struct {
	*channeltest.Env[*Channel]
	api *fakeAPI
	cfg Config
	// wrap, when set, is put between the adapter and the store (a full disk, say).
	wrap func(channels.State) channels.State
	tune tuning // testTuning unless a mutator changes it
}

func newEnv(t testing.TB, mutate ...func(*env)) *env {
	t.Helper()
	e := &env{api: newFakeAPI(t), tune: testTuning()}
	e.Env = channeltest.NewEnv(t, func(ctx context.Context, st channels.State, log *slog.Logger) (*Channel, error) {
		if e.wrap != nil {
			st = e.wrap(st)
		}
		return newChannel(ctx, e.cfg, st, log, e.tune)
	}, e.api.token)
	e.Describe = e.api.describeCalls
	e.cfg = Config{Token: e.api.token, APIURL: e.api.URL(), RequireMentionInGroups: true, PollTimeout: time.Second}
	for _, m := range mutate {
		m(e)
	}
	e.Start()
	return e
}

func (e *env) account() string { return strconv.FormatInt(e.api.botID, 10) }

func (e *env) addr(chat int64, thread int) core.Address {
	a := core.Address{Channel: Name, Account: e.account(), Chat: strconv.FormatInt(chat, 10)}
	if thread != 0 {
		a.Thread = strconv.Itoa(thread)
	}
	return a
}

func (e *env) sessionID(chat int64) string { return e.addr(chat, 0).SessionID() }

// waitPhase waits until chat's session is in phase p.
func (e *env) waitPhase(chat int64, p core.Phase) core.Session {
	e.TB.Helper()
	return e.WaitPhase(e.sessionID(chat), p)
}

func (e *env) session(chat int64) core.Session {
	e.TB.Helper()
	return e.Session(e.sessionID(chat))
}
