package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// Outcome is how one MCP tool call ended, for metrics and audit.
type Outcome string

// Call outcomes.
const (
	OutcomeOK          Outcome = "ok"
	OutcomeToolError   Outcome = "tool_error"  // the tool answered with isError or a protocol error
	OutcomeDenied      Outcome = "denied"      // the operator's deny_tools
	OutcomeUnavailable Outcome = "unavailable" // the server is down or has no such tool
	OutcomeTimeout     Outcome = "timeout"
	OutcomeFailed      Outcome = "failed" // the server died or the connection broke mid-call
)

// CallRecord describes one finished call.
type CallRecord struct {
	Server   string
	Tool     string // the server's own name of the tool
	Outcome  Outcome
	Duration time.Duration
}

// Observer hears about calls and server status changes; the coordinator wires it into
// metrics, audit and the chat. Its methods must not block.
type Observer interface {
	ToolCalled(CallRecord)
	// ServerStatus is called with a one-line status whenever a server's status changes
	// ("up, 3 tools", "down (…), restarting in 4s", "stopped").
	ServerStatus(server, line string)
}

type nopObserver struct{}

func (nopObserver) ToolCalled(CallRecord)       {}
func (nopObserver) ServerStatus(string, string) {}

// Options are the Manager's dependencies; every field may be left zero.
type Options struct {
	Log       *slog.Logger
	Observer  Observer
	Transport TransportFunc                                    // default DefaultTransport
	Now       func() time.Time                                 // measures durations; default time.Now
	Sleep     func(ctx context.Context, d time.Duration) error // the restart backoff
	Version   string                                           // plangate's version, told to servers
}

// Manager runs the configured MCP servers and is core's Toolbox for their tools.
type Manager struct {
	servers []*server
	byName  map[string]*server
	opt     Options // every field set

	stop context.CancelFunc
	wg   sync.WaitGroup
}

var _ core.Toolbox = (*Manager)(nil)

// New returns a Manager for cfg, which must be valid; Start starts the servers.
func New(cfg Config, o Options) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("checking tools.mcp: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Transport == nil {
		o.Transport = DefaultTransport(o.Log)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = backoff.Sleep
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	m := &Manager{byName: map[string]*server{}, opt: o}
	for _, sc := range cfg {
		s := &server{cfg: sc, m: m, status: "starting", state: StateStarting, secrets: sc.secrets()}
		m.servers = append(m.servers, s)
		m.byName[sc.Name] = s
	}
	return m, nil
}

// Start starts every server and waits until each has either listed its tools or failed
// its first attempt (bounded by its call timeout, at least 15s), so the first turn sees the tools. A
// server that fails is logged, retried in the background, and does not fail Start.
// The servers run until Close or until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	if m.stop != nil {
		return errors.New("starting MCP servers: already started")
	}
	ctx, m.stop = context.WithCancel(ctx)
	var first sync.WaitGroup
	for _, s := range m.servers {
		s.life = ctx
		s.mu.Lock()
		s.since = m.opt.Now() // starting since now
		s.mu.Unlock()
		first.Add(1)
		m.wg.Add(1)
		var once sync.Once
		go func() {
			defer m.wg.Done()
			s.run(ctx, func() { once.Do(first.Done) })
		}()
	}
	first.Wait()
	return nil
}

// Close stops every server (a command gets its stdin closed, then a signal) and waits.
func (m *Manager) Close() error {
	if m.stop != nil {
		m.stop()
	}
	m.wg.Wait()
	return nil
}

// Status is one line for the chat: each server and its state.
func (m *Manager) Status() string {
	parts := make([]string, 0, len(m.servers))
	for _, s := range m.servers {
		_, _, st := s.current("")
		parts = append(parts, s.cfg.Name+": "+st)
	}
	if len(parts) == 0 {
		return "MCP: no servers"
	}
	return "MCP " + strings.Join(parts, "; ")
}

// Tools lists the tools of the servers that are up, in configuration order.
func (m *Manager) Tools() []core.ToolSpec {
	var specs []core.ToolSpec
	for _, s := range m.servers {
		s.mu.Lock()
		specs = append(specs, s.specs...)
		s.mu.Unlock()
	}
	return specs
}

// Withdrawn reports the server of an MCP tool name whose server is configured but not up
// (starting, down or stopped), and its status line.
func (m *Manager) Withdrawn(name string) (string, string, bool) {
	srvName, _, ok := strings.Cut(name, Separator)
	s := m.byName[srvName]
	if !ok || s == nil {
		return "", "", false
	}
	sess, _, status := s.current("")
	if sess != nil {
		return "", "", false
	}
	return srvName, status, true
}

// WritePaths is empty for MCP tools: they change no workspace path the gate could check;
// the gate holds them with the plan's scope.allowed_tools instead.
func (m *Manager) WritePaths(string, json.RawMessage) ([]string, error) { return nil, nil }

// Call runs an MCP tool; every failure is an error the model sees as a tool error.
func (m *Manager) Call(ctx context.Context, _ core.Workspace, name string, args json.RawMessage) (string, error) {
	srvName, tool, ok := strings.Cut(name, Separator)
	s := m.byName[srvName]
	if !ok || s == nil {
		return "", fmt.Errorf("%s is not an MCP tool of this gateway", name)
	}
	start := m.opt.Now()
	out, outcome, err := s.call(ctx, tool, args)
	m.opt.Observer.ToolCalled(CallRecord{Server: srvName, Tool: tool, Outcome: outcome, Duration: m.opt.Now().Sub(start)})
	return out, err
}

// call runs tool on s and classifies the outcome.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage) (string, Outcome, error) {
	full := s.cfg.Name + Separator + tool
	if slices.Contains(s.cfg.DenyTools, tool) {
		return "", OutcomeDenied, fmt.Errorf("%s is denied by the operator (deny_tools of MCP server %s); do without it", full, s.cfg.Name)
	}
	sess, t, status := s.current(tool)
	if sess == nil {
		return "", OutcomeUnavailable, fmt.Errorf("MCP server %s is not available (%s); its tools are withdrawn, go on without them", s.cfg.Name, status)
	}
	if t == nil {
		return "", OutcomeUnavailable, fmt.Errorf("MCP server %s has no tool %q (any more)", s.cfg.Name, tool)
	}
	if a := strings.TrimSpace(string(args)); a == "" || a == "null" {
		args = json.RawMessage(`{}`)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.callTimeout())
	defer cancel()
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil && res.IsError:
		msg := render(res)
		if msg == "" {
			msg = "the tool reported an error without saying which"
		}
		return "", OutcomeToolError, fmt.Errorf("%s: %s", full, msg)
	case err == nil:
		return render(res), OutcomeOK, nil
	case ctx.Err() != nil:
		return "", OutcomeFailed, fmt.Errorf("%s was cancelled: %w", full, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		if !s.probe(sess) {
			return "", OutcomeFailed, &core.ToolServerDown{Server: s.cfg.Name, Msg: fmt.Sprintf(
				"%s timed out after %s and MCP server %s does not answer a ping either; its tools are withdrawn until it restarts", full, s.cfg.callTimeout(), s.cfg.Name)}
		}
		return "", OutcomeTimeout, fmt.Errorf("%s timed out after %s", full, s.cfg.callTimeout())
	case errors.As(err, &rpcErr):
		return "", OutcomeToolError, fmt.Errorf("%s: %s", full, s.clean(rpcErr.Message))
	}
	why := s.clean(err.Error())
	s.withdraw(sess, "failed during a call: "+why)
	return "", OutcomeFailed, &core.ToolServerDown{Server: s.cfg.Name, Msg: fmt.Sprintf(
		"MCP server %s failed during %s (%s); its tools are withdrawn until it restarts", s.cfg.Name, full, why)}
}
