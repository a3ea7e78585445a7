package mcp

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/core/conf"
)

// State is where a server is in its life, for readiness checks and metrics.
type State string

// Server states.
const (
	StateStarting State = "starting" // the first connection is being made
	StateUp       State = "up"
	StateDown     State = "down" // failed or died; restarting after a backoff
	StateStopped  State = "stopped"
)

// ServerState is a snapshot of one server for an operator: /readyz and /metrics.
type ServerState struct {
	Name  string
	State State
	// Since is when the server entered State, by Options.Now: a server that keeps failing
	// its restarts stays down since the first failure.
	Since    time.Time
	Tools    int // tools offered while up
	Restarts int // connections attempted after the first one
	// LastError is why the server last went down ("" if it never did), one line, with
	// the configured secrets (env, header, URL and argument values) replaced.
	LastError string
}

// Servers lists every configured server's state, in configuration order.
func (m *Manager) Servers() []ServerState {
	out := make([]ServerState, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		out = append(out, ServerState{Name: s.cfg.Name, State: s.state, Since: s.since, Tools: len(s.specs),
			Restarts: s.restarts, LastError: s.lastErr})
		s.mu.Unlock()
	}
	return out
}

// enterLocked moves s to st (s.mu held); since changes only with the state.
func (s *server) enterLocked(st State) {
	if s.state != st || s.since.IsZero() {
		s.state, s.since = st, s.m.opt.Now()
	}
}

// redacted stands for a secret in a status line.
const redacted = "[redacted]"

// minSecret is the shortest value treated as a secret: replacing shorter ones ("1", "on")
// would garble every message and hide nothing worth hiding.
const minSecret = 4

// secrets are the configured values that may be secret: env and header
// values (and a header's last word, the token of "Bearer <token>"), the URL's password and
// query values, and argument values ("--token=X" and whatever follows a flag, as in
// "--token X"). A server's error text may quote any of them (an HTTP client's error
// quotes the URL; a server may echo its own arguments). The scrubber also replaces their
// escaped forms, longest first.
func (c ServerConfig) secrets() conf.Scrubber {
	var out []string
	add := func(v string) {
		if len(v) >= minSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, v := range c.Env {
		add(v)
	}
	for _, v := range c.Headers {
		add(v)
		if f := strings.Fields(v); len(f) > 1 {
			add(f[len(f)-1])
		}
	}
	if u, err := url.Parse(c.URL); err == nil && c.URL != "" {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	args := slices.Concat(c.Command, c.Args)
	for i := 1; i < len(args); i++ {
		a := args[i]
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			add(v)
		} else if !strings.HasPrefix(a, "-") && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") {
			add(a)
		}
	}
	return conf.SecretsAs(redacted, out...)
}

// clean is text as one status line, with the configured secrets replaced.
func (s *server) clean(text string) string { return oneLine(s.secrets(text)) }
