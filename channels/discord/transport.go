package discord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// rewritingClient returns the HTTP client of the session: base's timeout (30s if none) and
// a transport that sends every request to apiURL's scheme and host (its path is a prefix),
// or unchanged when apiURL is empty.
func rewritingClient(base *http.Client, apiURL string) (*http.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	var rt http.RoundTripper = http.DefaultTransport
	if base != nil {
		hc.Timeout = base.Timeout
		if base.Transport != nil {
			rt = base.Transport
		}
	}
	if apiURL == "" {
		hc.Transport = rt
		return hc, nil
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("channels.discord.api_url %q is not an http(s) URL", apiURL)
	}
	hc.Transport = rewriter{base: rt, scheme: u.Scheme, host: u.Host, prefix: strings.TrimRight(u.Path, "/")}
	return hc, nil
}

// rewriter points requests built for discord.com at another server.
type rewriter struct {
	base         http.RoundTripper
	scheme, host string
	prefix       string
}

func (r rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme = r.scheme
	out.URL.Host = r.host
	out.Host = ""
	if r.prefix != "" {
		out.URL.Path = r.prefix + req.URL.Path
		if req.URL.RawPath != "" {
			out.URL.RawPath = r.prefix + req.URL.RawPath
		}
	}
	return r.base.RoundTrip(out)
}

// apiError is a failed Discord call with every secret removed from its text: it replaces
// the library's errors, whose text can hold request URLs with interaction tokens.
type apiError struct {
	Status int    // HTTP status; 0 for a network failure
	Code   int    // Discord's JSON error code, when it sent one
	msg    string // scrubbed
	ctxErr error  // the context error, when the call ended with its context
}

func (e *apiError) Error() string { return e.msg }

// Unwrap exposes only a context error, never the library's error.
func (e *apiError) Unwrap() error { return e.ctxErr }

// interactionTokens matches the secret part of interaction and webhook URLs.
var interactionTokens = regexp.MustCompile(`(/(?:interactions|webhooks)/[0-9]+/)[^/?"\s]+`)

// scrub returns err as an *apiError whose text holds neither the bot token nor an
// interaction token.
func (c *Channel) scrub(err error) error {
	if err == nil {
		return nil
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return err
	}
	out := &apiError{msg: c.scrubText(err.Error())}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		out.Status = rest.Response.StatusCode
		if rest.Message != nil {
			out.Code = rest.Message.Code
			out.msg = c.scrubText(fmt.Sprintf("HTTP %d: %s (code %d)", out.Status, rest.Message.Message, rest.Message.Code))
		} else {
			out.msg = fmt.Sprintf("HTTP %d", out.Status)
		}
	}
	if errors.Is(err, context.Canceled) {
		out.ctxErr = context.Canceled
	} else if errors.Is(err, context.DeadlineExceeded) {
		out.ctxErr = context.DeadlineExceeded
	}
	return out
}

func (c *Channel) scrubText(s string) string {
	if c.token != "" {
		s = strings.ReplaceAll(s, c.token, "[token]")
	}
	return interactionTokens.ReplaceAllString(s, "${1}[token]")
}

// transient reports whether a failed call may succeed when tried again: a network failure
// or a server error. Discord's 4xx answers (a missing permission, an unknown message) do
// not change by waiting, and 429s were already waited out by the library.
func transient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) && ae.ctxErr != nil {
		return false
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		return rest.Response.StatusCode >= 500
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue)
}

// do runs one REST call with a bounded time per attempt, trying again after network
// failures and 5xx answers with a doubling pause. The error it returns is scrubbed.
func (c *Channel) do(ctx context.Context, what string, call func(opts ...discordgo.RequestOption) error) error {
	return c.doWithin(ctx, c.tune.attemptTime, c.tune.maxAttempts, what, call)
}

func (c *Channel) doWithin(ctx context.Context, per time.Duration, attempts int, what string, call func(opts ...discordgo.RequestOption) error) error {
	pause := c.tune.backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, per)
		err := call(discordgo.WithContext(actx))
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !transient(err) || attempt >= attempts {
			return fmt.Errorf("%s: %w", what, c.scrub(err))
		}
		c.log.Warn("discord call failed; trying again", "call", what, "attempt", attempt, "err", c.scrub(err))
		if sleep(ctx, pause) != nil {
			return fmt.Errorf("%s: %w", what, c.scrub(err))
		}
		pause = min(pause*2, c.tune.maxBackoff)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
