package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// scrub returns err with both tokens removed; errors.Is and errors.As still reach the
// library's typed errors (rate limits, status codes, Slack's error codes).
func (c *Channel) scrub(err error) error { return c.scrubber().Error(err) }

func (c *Channel) scrubText(s string) string { return c.scrubber()(s) }

func (c *Channel) scrubber() conf.Scrubber {
	return conf.Secrets(c.cfg.BotToken, c.cfg.AppToken)
}

// do runs one Web API request with Slack's rules (channels.Policy), paced per channel when
// paced is set (posts and updates). ch "" is a request that concerns no channel.
func (c *Channel) do(ctx context.Context, ch string, paced bool, method string, fn func(ctx context.Context) error) error {
	call := channels.Call{Name: method, Target: slog.String("slack_channel", ch)}
	if paced {
		call.Lane = c.pace.Lane(ch)
	}
	p := channels.Policy{
		Platform: Name, Patience: c.tune.retry,
		Classify: c.classify, Scrub: c.scrub, Log: c.log,
		// The caller falls back to plain text and logs that.
		Quiet: func(_ string, err error) bool { return isFormatRefusal(err) },
	}
	return p.Do(ctx, call, fn)
}

// classify is Slack's answer to channels.Policy: a 429 waits Retry-After (a second without
// one); a 5xx, Slack's own temporary errors and network failures are temporary.
func (c *Channel) classify(err error) error {
	var limited *slackgo.RateLimitedError
	switch {
	case errors.As(err, &limited):
		secs := max(int64(limited.RetryAfter/time.Second), 1)
		return channels.RateLimited(time.Duration(secs) * c.tune.retryUnit)
	case isStatus(err, http.StatusTooManyRequests):
		return channels.RateLimited(c.tune.retryUnit)
	case retryable(err):
		return channels.ErrTemporary
	}
	return channels.ErrPermanent
}

// isFormatRefusal is Slack refusing the blocks of a message: sent again as plain text.
func isFormatRefusal(err error) bool {
	return isSlackError(err, "invalid_blocks", "invalid_blocks_format", "msg_too_long")
}

// newPacer keeps posts under Slack's limit of about one message a second per channel.
func newPacer(t tuning) *channels.Pacer[string] {
	return channels.NewPacer(func(string) channels.Rate {
		return channels.Rate{Every: t.postEvery, Burst: t.burst}
	}, channels.Rate{})
}

// isSlackError reports whether err is a Web API answer {"ok":false,"error":<one of codes>}.
func isSlackError(err error, codes ...string) bool {
	var se slackgo.SlackErrorResponse
	return errors.As(err, &se) && slices.Contains(codes, se.Err)
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
	return channels.Transient(err)
}

// seenSet remembers recently handled event keys, so an event Slack delivers again (a retry,
// or a message as both app_mention and message.im) is handled once within a process.
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
