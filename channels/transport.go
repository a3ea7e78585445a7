package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// What a failed platform request says about sending it again: an adapter's classifier
// (Policy.Classify) answers one of these and the retry loop decides with errors.Is.
var (
	// ErrRateLimited: the platform asked to wait; a *RateLimitError says how long.
	ErrRateLimited = errors.New("rate limited")
	// ErrTemporary: the same request may succeed after a pause (5xx, a network failure).
	ErrTemporary = errors.New("temporary failure")
	// ErrPermanent: sending it again changes nothing (4xx, a refused message). It matches
	// core.ErrRefused, so the engine's outbox gives such a reply up at once.
	ErrPermanent = fmt.Errorf("permanent failure: %w", core.ErrRefused)
)

// RateLimitError is a rate limit with the wait the platform asked for. It matches
// ErrRateLimited.
type RateLimitError struct{ RetryAfter time.Duration }

// RateLimited is the classifier's answer to a rate limit that asks for a wait of d.
func RateLimited(d time.Duration) error { return &RateLimitError{RetryAfter: d} }

func (e *RateLimitError) Error() string        { return fmt.Sprintf("rate limited for %v", e.RetryAfter) }
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Delay is the wait asked for; core.SendDelay reads it from a send's error.
func (e *RateLimitError) Delay() time.Duration { return e.RetryAfter }

// judged is Do's final error: the scrubbed error as text, and below it both that error and
// the classifier's verdict, so a caller (the engine's outbox) can tell a refusal
// (core.ErrRefused) and a rate limit's wait (core.SendDelay) from a temporary failure.
type judged struct{ err, verdict error }

func (j judged) Error() string   { return j.err.Error() }
func (j judged) Unwrap() []error { return []error{j.err, j.verdict} }

// Transient reports whether err is a failure of the network rather than an answer: an
// attempt timed out, the connection failed, or it was cut while the answer was read.
func Transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Lane is where one paced request queues: Wait before each attempt, Block after a rate
// limit. Pacer.Lane makes them.
type Lane interface {
	Wait(ctx context.Context) error
	Block(d time.Duration)
}

// Policy is how one platform's requests are tried: the classifier that reads its errors,
// the scrubber that takes secrets out of them, and how often and how patiently to try.
type Policy struct {
	Platform string // "telegram": starts every error and log message
	Patience
	// Classify answers ErrRateLimited (as a *RateLimitError), ErrTemporary or ErrPermanent
	// for an error of the platform's library.
	Classify func(error) error
	// Scrub returns the error without secrets, as it may be logged and returned. The
	// classifier always sees the library's own error.
	Scrub func(error) error
	Log   *slog.Logger
	// Quiet reports failures the caller handles and logs itself (a formatting refusal it
	// answers with plain text), so they are not logged here as failed requests.
	Quiet func(name string, err error) bool
}

// Patience is how often and how patiently a request is tried.
type Patience struct {
	Attempts    int           // per request, rate limits included; below 1 means 1
	Backoff     time.Duration // first pause after a temporary failure; doubles
	MaxBackoff  time.Duration // bound on that pause
	AttemptTime time.Duration // bound on one attempt; 0 = the caller's context only
}

// DefaultPatience is five attempts, pauses from half a second doubling up to ten, thirty
// seconds for one attempt.
func DefaultPatience() Patience {
	return Patience{Attempts: 5, Backoff: 500 * time.Millisecond, MaxBackoff: 10 * time.Second, AttemptTime: 30 * time.Second}
}

// Call is one request: its name in errors and logs, the conversation it concerns (a log
// attribute) and, when it is paced, its lane.
type Call struct {
	Name   string
	Target slog.Attr
	Lane   Lane
}

// Do runs fn until it succeeds or the policy gives up: a rate limit waits what the
// platform asked (holding back the call's lane as long), a temporary failure backs off, a
// permanent one ends at once. What finally fails is logged and returned scrubbed; when
// ctx ends, Do returns ctx.Err().
func (p Policy) Do(ctx context.Context, c Call, fn func(ctx context.Context) error) error {
	wait := backoff.New(p.Backoff, p.MaxBackoff)
	for attempt := 1; ; attempt++ {
		if c.Lane != nil {
			if err := c.Lane.Wait(ctx); err != nil {
				return err
			}
		}
		raw := p.attempt(ctx, fn)
		if raw == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err := p.Scrub(raw)
		verdict := p.Classify(raw)
		var pause time.Duration
		var limited *RateLimitError
		switch {
		case errors.As(verdict, &limited):
			pause = limited.RetryAfter
			if c.Lane != nil {
				c.Lane.Block(pause)
			}
			p.Log.Warn(p.Platform+" rate limit; waiting as asked", "method", c.Name, c.Target, "retry_after", pause, "attempt", attempt)
		case errors.Is(verdict, ErrTemporary):
			pause = wait.NextBackOff()
		default:
			p.failed(c, attempt, err)
			return fmt.Errorf("%s %s: %w", p.Platform, c.Name, judged{err, verdict})
		}
		if attempt >= p.Attempts {
			p.failed(c, attempt, err)
			return fmt.Errorf("%s %s: giving up after %d attempts: %w", p.Platform, c.Name, attempt, judged{err, verdict})
		}
		p.Log.Debug(p.Platform+" request will be retried", "method", c.Name, c.Target, "attempt", attempt, "pause", pause, "err", err)
		if err := Sleep(ctx, pause); err != nil {
			return err
		}
	}
}

func (p Policy) attempt(ctx context.Context, fn func(ctx context.Context) error) error {
	if p.AttemptTime <= 0 {
		return fn(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, p.AttemptTime)
	defer cancel()
	return fn(actx)
}

// failed logs a request that will not be tried again, so nothing fails silently.
func (p Policy) failed(c Call, attempts int, err error) {
	if p.Quiet != nil && p.Quiet(c.Name, err) {
		return
	}
	p.Log.Error(p.Platform+" request failed", "method", c.Name, c.Target, "attempts", attempts, "err", err)
}

// Sleep waits d or until ctx ends (backoff.Sleep).
func Sleep(ctx context.Context, d time.Duration) error { return backoff.Sleep(ctx, d) }
