package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// idleConns is how many keep-alive connections to the Bot API are kept: the long poll plus
// a reply to every session answering at once. net/http keeps only two per host by
// default, so under concurrency most requests would open and drop a connection.
const idleConns = 64

// newTransport is the default transport with a keep-alive pool sized for concurrency.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, idleConns)
	t.MaxIdleConnsPerHost = idleConns
	return t
}

// doer is the HTTP client the library and the poller use. A 5xx answer becomes a
// *serverError before the library reads it, because the library reports those only as
// untyped text, and the retry decision needs a type.
type doer struct{ c *http.Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		resp.Body.Close()
		return nil, &serverError{status: resp.StatusCode}
	}
	return resp, nil
}

// serverError is a 5xx answer from the Bot API: worth retrying.
type serverError struct{ status int }

func (e *serverError) Error() string {
	return fmt.Sprintf("telegram answered %d %s", e.status, http.StatusText(e.status))
}

// scrub returns err with every form of the token removed; errors.Is and errors.As still
// reach the library's typed errors (429, 5xx).
func (c *Channel) scrub(err error) error { return conf.Secrets(c.token).Error(err) }

func (c *Channel) scrubText(s string) string { return conf.Secrets(c.token)(s) }

// do runs one Bot API request with Telegram's rules (channels.Policy), paced per chat when
// paced is set (messages and edits). chat 0 is a request that concerns no chat (getMe).
func (c *Channel) do(ctx context.Context, chat int64, paced bool, method string, fn func(ctx context.Context) error) error {
	call := channels.Call{Name: method, Target: slog.Int64("chat", chat)}
	if paced {
		call.Lane = c.pace.Lane(chat)
	}
	p := channels.Policy{
		Platform: Name, Patience: c.tune.retry,
		Classify: c.classify, Scrub: c.scrub, Log: c.log, Quiet: quiet,
	}
	return p.Do(ctx, call, fn)
}

// quiet names the failures the caller handles and logs itself, and a callback query too old
// to answer (after a restart: only the toast is lost).
func quiet(method string, err error) bool {
	return isNotModified(err) || isEntityError(err) ||
		method == "answerCallbackQuery" && errors.Is(err, bot.ErrorBadRequest)
}

// classify is Telegram's answer to channels.Policy: a 429 waits retry_after (in seconds),
// a 5xx or a network failure is temporary, every other answer is final.
func (c *Channel) classify(err error) error {
	var tooMany *bot.TooManyRequestsError
	var se *serverError
	switch {
	case errors.As(err, &tooMany):
		return channels.RateLimited(time.Duration(max(tooMany.RetryAfter, 1)) * c.tune.retryUnit)
	case errors.As(err, &se) || channels.Transient(err):
		return channels.ErrTemporary
	}
	return channels.ErrPermanent
}

// newPacer keeps outgoing messages under Telegram's limits: about one a second per chat,
// twenty a minute per group (group and supergroup ids are negative), thirty a second in
// all, of which a second's worth may go at once.
func newPacer(t tuning) *channels.Pacer[int64] {
	return channels.NewPacer(func(chat int64) channels.Rate {
		if chat < 0 {
			return channels.Rate{Every: t.groupEvery, Burst: t.burst}
		}
		return channels.Rate{Every: t.privateEvery, Burst: t.burst}
	}, channels.Rate{Every: t.globalEvery, Burst: 30})
}

// isEntityError is Telegram refusing the formatting of a text.
func isEntityError(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

// isNotModified is Telegram saying an edit would change nothing.
func isNotModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}
