package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TransportFunc opens a new transport to a server, once per (re)start. Tests replace it
// with in-memory transports.
type TransportFunc func(ctx context.Context, s ServerConfig) (sdk.Transport, error)

// inheritedEnv is what a command server gets of plangate's own environment: enough to
// find programs and a home, never plangate's secrets (API keys, bot tokens).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// DefaultTransport runs a command over stdio or connects to a streamable HTTP endpoint.
func DefaultTransport(log *slog.Logger) TransportFunc {
	return func(_ context.Context, s ServerConfig) (sdk.Transport, error) {
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil {
				return nil, fmt.Errorf("parsing the url: %w", err)
			}
			hc := &http.Client{Transport: headerTransport{headers: s.Headers, scheme: u.Scheme, host: u.Host, base: http.DefaultTransport}}
			return &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1}, nil
		}
		argv := slices.Concat(s.Command, s.Args)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = s.Dir
		for _, k := range inheritedEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
		cmd.Stderr = &stderrLog{log: log, server: s.Name}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
}

// headerTransport adds the configured headers to every request to the configured server
// (scheme and host), and to no other: a redirect elsewhere must not carry the secrets
// they usually hold (Go's client drops Authorization there; this must not add it back).
type headerTransport struct {
	headers      map[string]string
	scheme, host string
	base         http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && r.URL.Scheme == t.scheme && strings.EqualFold(r.URL.Host, t.host) {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", r.URL.Host, err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The SDK reads a JSON answer whole: bound it as its stdio transport bounds a
		// frame, so a hostile or broken server cannot fill the gateway's memory. (An
		// event stream is long-lived; the SDK bounds each of its events.)
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: sdk.DefaultMaxLineLength}
	}
	return resp, nil
}

// errTooLarge ends the read of an answer over the bound.
var errTooLarge = fmt.Errorf("the server's answer is larger than %d MB", sdk.DefaultMaxLineLength>>20)

// cappedBody fails a read past left bytes.
type cappedBody struct {
	io.ReadCloser
	left int
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}

// stderrLog logs what a server writes to stderr, a line at a time, at debug level: that
// is where servers explain why they fail. exec.Cmd copies into it from one goroutine.
type stderrLog struct {
	log    *slog.Logger
	server string
	buf    []byte
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Debug("mcp server stderr", "server", w.server, "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 { // a server that never ends its line
		w.log.Debug("mcp server stderr", "server", w.server, "line", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
