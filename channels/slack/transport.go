package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
)

// scrubbed is an error whose text had the tokens removed. It keeps errors.Is and errors.As
// working for the typed Slack errors without offering the chain itself, where a token
// could be read.
type scrubbed struct {
	msg  string
	orig error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.orig, target) }

func (e *scrubbed) As(target any) bool {
	switch t := target.(type) {
	case **slackgo.RateLimitedError:
		return errors.As(e.orig, t)
	case *slackgo.StatusCodeError:
		return errors.As(e.orig, t)
	case *slackgo.SlackErrorResponse:
		return errors.As(e.orig, t)
	}
	return false
}

// scrub returns err with both tokens replaced.
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
	bot, app := c.cfg.BotToken, c.cfg.AppToken
	return channels.ScrubSecrets(s, bot, url.QueryEscape(bot), app, url.QueryEscape(app))
}

// do runs one Web API request with Slack's rules: paced per channel when paced is set
// (posts and updates), 429 waits Retry-After and tries again, 5xx and network failures back
// off and try again, all bounded by maxAttempts. What finally fails is logged with the
// channel, the method and the reason, and returned; the tokens are never part of either.
// ch "" is a request that concerns no channel.
func (c *Channel) do(ctx context.Context, ch string, paced bool, method string, fn func(ctx context.Context) error) error {
	wait := c.tune.backoff
	for attempt := 1; ; attempt++ {
		if paced {
			if err := sleep(ctx, c.pace.reserve(ch)); err != nil {
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
		var limited *slackgo.RateLimitedError
		switch {
		case errors.As(raw, &limited):
			secs := max(int64(limited.RetryAfter/time.Second), 1)
			pause = time.Duration(secs) * c.tune.retryUnit
			c.pace.block(ch, pause)
			c.log.Warn("slack rate limit; waiting as asked", "method", method, "slack_channel", ch, "retry_after", pause, "attempt", attempt)
		case isStatus(raw, http.StatusTooManyRequests):
			// A 429 without Retry-After: wait a second's worth.
			pause = c.tune.retryUnit
			c.pace.block(ch, pause)
		case retryable(raw):
			pause = wait
			wait = min(wait*2, c.tune.maxBackoff)
		default:
			c.failed(method, ch, attempt, err)
			return fmt.Errorf("slack %s: %w", method, err)
		}
		if attempt >= c.tune.maxAttempts {
			c.failed(method, ch, attempt, err)
			return fmt.Errorf("slack %s: giving up after %d attempts: %w", method, attempt, err)
		}
		c.log.Debug("slack request will be retried", "method", method, "slack_channel", ch, "attempt", attempt, "pause", pause, "err", err)
		if err := sleep(ctx, pause); err != nil {
			return err
		}
	}
}

// failed logs a request that will not be tried again, so nothing is dropped silently.
func (c *Channel) failed(method, ch string, attempts int, err error) {
	if isSlackError(err, "invalid_blocks", "invalid_blocks_format", "msg_too_long") {
		return // the caller falls back to plain text and logs that
	}
	c.log.Error("slack request failed", "method", method, "slack_channel", ch, "attempts", attempts, "err", err)
}

// isSlackError reports whether err is a Web API answer {"ok":false,"error":<one of codes>}.
func isSlackError(err error, codes ...string) bool {
	var se slackgo.SlackErrorResponse
	if !errors.As(err, &se) {
		return false
	}
	for _, code := range codes {
		if se.Err == code {
			return true
		}
	}
	return false
}

func isStatus(err error, code int) bool {
	var sc slackgo.StatusCodeError
	return errors.As(err, &sc) && sc.Code == code
}

// retryable reports whether a failed request may succeed when simply sent again.
func retryable(err error) bool {
	var sc slackgo.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code >= 500
	}
	if isSlackError(err, "internal_error", "fatal_error", "service_unavailable", "request_timeout") {
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
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
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

// pacer keeps posts under Slack's limit of about one message a second per channel, so a
// burst of replies is spread out instead of being answered with 429s. Each channel is a GCRA
// bucket: burst posts at once, then one per postEvery.
type pacer struct {
	tune tuning
	now  func() time.Time

	mu    sync.Mutex
	chans map[string]time.Time // theoretical arrival time of the channel's next post
}

func newPacer(t tuning) *pacer {
	return &pacer{tune: t, now: time.Now, chans: map[string]time.Time{}}
}

// reserve books the next post in ch and says how long the caller must wait for it.
func (p *pacer) reserve(ch string) time.Duration {
	every := p.tune.postEvery
	if every <= 0 || ch == "" {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.forgetIdle(now)
	tat := p.chans[ch]
	if tat.Before(now) {
		tat = now
	}
	allowAt := tat.Add(-time.Duration(max(p.tune.burst, 1)-1) * every)
	p.chans[ch] = tat.Add(every)
	if allowAt.After(now) {
		return allowAt.Sub(now)
	}
	return 0
}

// block holds back ch for d after Slack answered 429.
func (p *pacer) block(ch string, d time.Duration) {
	if ch == "" || p.tune.postEvery <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	until := p.now().Add(d).Add(time.Duration(max(p.tune.burst, 1)-1) * p.tune.postEvery)
	if until.After(p.chans[ch]) {
		p.chans[ch] = until
	}
}

// forgetIdle drops channels quiet long enough to be full again, so the map does not grow
// with every channel the bot ever spoke in. p.mu must be held.
func (p *pacer) forgetIdle(now time.Time) {
	if len(p.chans) < 1024 {
		return
	}
	for ch, tat := range p.chans {
		if tat.Before(now) {
			delete(p.chans, ch)
		}
	}
}

// seenSet remembers recently handled event keys, so an event Slack delivers again (a
// retry after a slow ack or a reconnect, or the same message as both app_mention and
// message.im) is handled once. The engine's durable de-duplication covers restarts.
type seenSet struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	at    map[string]time.Time
	prune time.Time
}

func newSeenSet(ttl time.Duration) *seenSet {
	return &seenSet{ttl: ttl, now: time.Now, at: map[string]time.Time{}}
}

// first records keys and reports whether none of them was seen before.
func (s *seenSet) first(keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.After(s.prune) {
		for k, t := range s.at {
			if now.Sub(t) > s.ttl {
				delete(s.at, k)
			}
		}
		s.prune = now.Add(s.ttl / 4)
	}
	fresh := true
	for _, k := range keys {
		if k == "" {
			continue
		}
		if t, ok := s.at[k]; ok && now.Sub(t) <= s.ttl {
			fresh = false
		}
	}
	for _, k := range keys {
		if k != "" {
			s.at[k] = now
		}
	}
	return fresh
}
