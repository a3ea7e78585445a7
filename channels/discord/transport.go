package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
)

// rewritingClient is the session's HTTP client: base's timeout (30s if none) and a
// transport that sends every request to apiURL's scheme and host (its path a prefix).
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

// apiError is a failed REST call as Discord answered it: the HTTP status, Discord's JSON
// error code and a short scrubbed text in place of the library's, which holds the whole
// request URL and body. errors.As finds it and the library's error below it.
type apiError struct {
	Status int    // HTTP status
	Code   int    // Discord's JSON error code, when it sent one
	msg    string // scrubbed
	err    error  // the library's error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// interactionTokens matches the secret part of interaction and webhook URLs.
var interactionTokens = regexp.MustCompile(`(/(?:interactions|webhooks)/[0-9]+/)[^/?"\s]+`)

// scrub returns err with neither the bot token nor an interaction token in its text; a
// REST answer becomes an *apiError.
func (c *Channel) scrub(err error) error {
	if err == nil {
		return nil
	}
	var rest *discordgo.RESTError
	var ae *apiError
	if errors.As(err, &rest) && rest.Response != nil && !errors.As(err, &ae) {
		ae = &apiError{Status: rest.Response.StatusCode, msg: fmt.Sprintf("HTTP %d", rest.Response.StatusCode), err: err}
		if rest.Message != nil {
			ae.Code = rest.Message.Code
			ae.msg = c.scrubText(fmt.Sprintf("HTTP %d: %s (code %d)", ae.Status, rest.Message.Message, rest.Message.Code))
		}
		err = ae
	}
	return conf.Scrubber(c.scrubText).Error(err)
}

func (c *Channel) scrubText(s string) string {
	return interactionTokens.ReplaceAllString(conf.Secrets(c.token)(s), "${1}[token]")
}

// classify is Discord's answer to channels.Policy: a network failure or a server error is
// temporary. 4xx answers do not change by waiting, and the library waits out 429s.
func classify(err error) error {
	if errors.Is(err, context.Canceled) {
		return channels.ErrPermanent
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		if rest.Response.StatusCode >= 500 {
			return channels.ErrTemporary
		}
		return channels.ErrPermanent
	}
	if channels.Transient(err) {
		return channels.ErrTemporary
	}
	return channels.ErrPermanent
}

// do runs one REST call with Discord's rules (channels.Policy); its error is scrubbed.
func (c *Channel) do(ctx context.Context, what string, call func(opts ...discordgo.RequestOption) error) error {
	return c.doWithin(ctx, c.tune.retry.AttemptTime, c.tune.retry.Attempts, what, call)
}

func (c *Channel) doWithin(ctx context.Context, per time.Duration, attempts int, what string, call func(opts ...discordgo.RequestOption) error) error {
	p := channels.Policy{
		Platform: Name, Patience: channels.Patience{Attempts: attempts, Backoff: c.tune.retry.Backoff, MaxBackoff: c.tune.retry.MaxBackoff, AttemptTime: per},
		Classify: classify, Scrub: c.scrub, Log: c.log,
	}
	return p.Do(ctx, channels.Call{Name: what}, func(ctx context.Context) error {
		return call(discordgo.WithContext(ctx))
	})
}
