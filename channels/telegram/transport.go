package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/channels"
)

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

// scrubbed is an error whose text had the bot token removed. It keeps errors.Is working
// for the original chain without offering it through Unwrap, where the token could be read.
type scrubbed struct {
	msg  string
	orig error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.orig, target) }

// As lets callers find the typed Telegram errors (429, 5xx) without exposing the chain.
func (e *scrubbed) As(target any) bool {
	switch t := target.(type) {
	case **bot.TooManyRequestsError:
		return errors.As(e.orig, t)
	case **serverError:
		return errors.As(e.orig, t)
	}
	return false
}

// scrub returns err with every occurrence of the token replaced.
func (c *Channel) scrub(err error) error {
	if err == nil {
		return nil
	}
	if s, ok := err.(*scrubbed); ok {
		return s
	}
	return &scrubbed{msg: c.scrubText(err.Error()), orig: err}
}

func (c *Channel) scrubText(s string) string {
	if c.token == "" {
		return s
	}
	return channels.ScrubSecrets(s, c.token, url.PathEscape(c.token), url.QueryEscape(c.token))
}

// do runs one Bot API request with Telegram's rules: paced per chat when paced is set
// (messages and edits), 429 waits retry_after and tries again, 5xx and network failures
// back off and try again, all bounded by maxAttempts. What finally fails is logged with
// the chat and the reason and returned; the token is never part of either. chat 0 is a
// request that concerns no chat (getMe, setMyCommands).
func (c *Channel) do(ctx context.Context, chat int64, paced bool, method string, fn func(ctx context.Context) error) error {
	wait := c.tune.backoff
	for attempt := 1; ; attempt++ {
		if paced {
			if err := c.pace.wait(ctx, chat); err != nil {
				return err
			}
		}
		actx, cancel := context.WithTimeout(ctx, c.tune.attemptTime)
		raw := fn(actx)
		cancel()
		if raw == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err := c.scrub(raw)
		var pause time.Duration
		var tooMany *bot.TooManyRequestsError
		switch {
		case errors.As(raw, &tooMany):
			pause = time.Duration(max(tooMany.RetryAfter, 1)) * c.tune.retryUnit
			c.pace.block(chat, pause)
		case retryable(raw):
			pause = wait
			wait = min(wait*2, c.tune.maxBackoff)
		default:
			c.failed(method, chat, attempt, err)
			return fmt.Errorf("telegram %s: %w", method, err)
		}
		if attempt >= c.tune.maxAttempts {
			c.failed(method, chat, attempt, err)
			return fmt.Errorf("telegram %s: giving up after %d attempts: %w", method, attempt, err)
		}
		c.log.Debug("telegram request will be retried", "method", method, "chat", chat, "attempt", attempt, "pause", pause, "err", err)
		if err := sleep(ctx, pause); err != nil {
			return err
		}
	}
}

func (c *Channel) failed(method string, chat int64, attempts int, err error) {
	switch {
	case isNotModified(err), isEntityError(err):
		return // the caller turns these into success or a plain-text resend, and logs that
	case method == "answerCallbackQuery" && errors.Is(err, bot.ErrorBadRequest):
		return // a query too old to answer (after a restart): only the toast is lost
	}
	c.log.Error("telegram request failed", "method", method, "chat", chat, "attempts", attempts, "err", err)
}

// retryable reports whether a failed request may succeed when simply sent again.
func retryable(err error) bool {
	var se *serverError
	if errors.As(err, &se) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) { // one attempt timed out, the caller's ctx did not
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	// A connection cut while the answer was read.
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// isEntityError is Telegram refusing the formatting of a text.
func isEntityError(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

// isNotModified is Telegram saying an edit would change nothing.
func isNotModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
