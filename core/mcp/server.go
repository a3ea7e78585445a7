package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
	"github.com/plangate/plangate/core/conf"
)

// Restart backoff: a server that keeps dying is retried less and less often, 1s, 2s, 4s,
// … up to maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = 2 * time.Minute
)

// server supervises one MCP server: it connects, lists the tools, waits for the
// connection to end and restarts it after a backoff, until its context ends.
type server struct {
	cfg ServerConfig
	m   *Manager

	mu     sync.Mutex
	sess   *sdk.ClientSession // nil while down
	tools  map[string]*sdk.Tool
	specs  []core.ToolSpec
	status string
	why    string          // set before closing a live session on purpose (a hung server)
	life   context.Context // the server's lifetime: Start to Close

	relisting bool               // a re-list after list_changed is running
	again     *sdk.ClientSession // list_changed came meanwhile (from this session): list once more

	// For Servers (readiness and metrics), under mu.
	state    State
	since    time.Time
	restarts int
	lastErr  string
	secrets  conf.Scrubber // cfg.secrets(), kept out of every status line
}

// run keeps the server running; ready is called once the first attempt is over, whether
// it succeeded or not, so Start can wait for the tools without waiting for a retry.
func (s *server) run(ctx context.Context, ready func()) {
	waits := backoff.New(minBackoff, maxBackoff)
	for {
		started := s.m.opt.Now()
		err := s.session(ctx, ready)
		ready()
		if ctx.Err() != nil {
			s.stopped()
			return
		}
		if s.m.opt.Now().Sub(started) >= maxBackoff {
			waits.Reset() // it ran long enough: start the backoff over
		}
		delay := waits.NextBackOff()
		why := s.clean(err.Error())
		s.m.opt.Log.Warn("mcp server down; its tools are withdrawn", "server", s.cfg.Name, "err", why, "retry_in", delay)
		s.mu.Lock()
		s.enterLocked(StateDown)
		s.lastErr = why
		line := s.statusLocked(fmt.Sprintf("down (%s), restarting in %s", why, delay))
		s.mu.Unlock()
		s.notifyStatus(line)
		if err := s.m.opt.Sleep(ctx, delay); err != nil {
			s.stopped()
			return
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// stopped marks s stopped: plangate is closing it.
func (s *server) stopped() {
	s.mu.Lock()
	s.enterLocked(StateStopped)
	line := s.statusLocked("stopped")
	s.mu.Unlock()
	s.notifyStatus(line)
}

// session runs one connection from start to end and says why it ended.
func (s *server) session(ctx context.Context, ready func()) error {
	t, err := s.m.opt.Transport(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("opening transport: %w", err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "plangate", Version: s.m.opt.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			// The handler runs on the connection's reader: list from elsewhere.
			s.relistSoon(ctx, req.Session)
		},
	})
	cctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	sess, err := client.Connect(cctx, t, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	defer context.AfterFunc(ctx, func() { _ = sess.Close() })()
	if err := s.list(ctx, sess, true); err != nil {
		_ = sess.Close()
		return err
	}
	ready()
	err = sess.Wait()
	_ = sess.Close() // reaps a command that exited; idempotent
	s.mu.Lock()
	ended := endReason(s.why, err)
	s.why = ""
	s.sess, s.tools, s.specs = nil, nil, nil
	line := ""
	if ctx.Err() == nil {
		// Down with the session, under the same lock: a call that finds no session must
		// not read the "up" line of the one that just ended (the supervisor adds when it
		// restarts).
		why := s.clean(ended.Error())
		s.enterLocked(StateDown)
		s.lastErr = why
		line = s.statusLocked("down (" + why + ")")
	}
	s.mu.Unlock()
	s.notifyStatus(line)
	return ended
}

// endReason says why a session ended: why it was closed on purpose, else how the
// connection ended (err from Wait).
func endReason(why string, err error) error {
	switch {
	case why != "":
		return errors.New(why)
	case err == nil || errors.Is(err, sdk.ErrConnectionClosed):
		return errors.New("the server closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// list fetches the tools of sess and publishes them; a re-list (not first) publishes only
// while sess is still the live session, so a late answer cannot revive a dead one.
func (s *server) list(ctx context.Context, sess *sdk.ClientSession, first bool) error {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	tools := map[string]*sdk.Tool{}
	var specs []core.ToolSpec
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		if _, dup := tools[t.Name]; dup {
			continue
		}
		spec, ok := s.spec(t)
		if !ok {
			continue
		}
		tools[t.Name] = t
		specs = append(specs, spec)
	}
	slices.SortFunc(specs, func(a, b core.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	s.mu.Lock()
	if !first && s.sess != sess {
		s.mu.Unlock()
		return nil
	}
	s.sess, s.tools, s.specs = sess, tools, specs
	s.enterLocked(StateUp)
	// Up with the session, under the same lock: set after unlocking, a re-list's line
	// could overwrite the "down" of a withdraw that came in between.
	line := s.statusLocked(fmt.Sprintf("up, %d tools", len(specs)))
	s.mu.Unlock()
	if first {
		s.m.opt.Log.Info("mcp server up", "server", s.cfg.Name, "tools", len(specs))
	}
	s.notifyStatus(line)
	return nil
}

// relistSoon re-lists the tools after the server said they changed, one re-list at a
// time: notifications that come while one runs are answered by one more, so a server
// that floods list_changed costs two lists, not a goroutine and a request each.
func (s *server) relistSoon(ctx context.Context, sess *sdk.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.relisting {
		s.again = sess
		return
	}
	s.relisting = true
	go func() {
		for sess != nil {
			if err := s.list(ctx, sess, false); err != nil && ctx.Err() == nil {
				s.m.opt.Log.Warn("mcp server tools could not be re-listed", "server", s.cfg.Name, "err", oneLine(err.Error()))
			}
			s.mu.Lock()
			sess, s.again = s.again, nil
			s.relisting = sess != nil
			s.mu.Unlock()
		}
	}()
}

// spec describes t to the model and the gate. Only the operator makes a tool read-only;
// a denied tool, or one whose name the model APIs cannot carry, is not offered.
func (s *server) spec(t *sdk.Tool) (core.ToolSpec, bool) {
	name := s.cfg.Name + Separator + t.Name
	if slices.Contains(s.cfg.DenyTools, t.Name) {
		return core.ToolSpec{}, false
	}
	if !validToolName(name) {
		s.m.opt.Log.Warn("mcp tool not offered: its name is not [A-Za-z0-9_-]{1,64}", "server", s.cfg.Name, "tool", t.Name)
		return core.ToolSpec{}, false
	}
	params := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			params = b
		}
	}
	spec := core.ToolSpec{Name: name, Description: t.Description, Parameters: params, Kind: core.ToolMutating}
	if s.cfg.TrustReadOnly || slices.Contains(s.cfg.ReadOnlyTools, t.Name) {
		spec.Kind = core.ToolReadOnly // the operator's word; a server's readOnlyHint never is
	} else if a := t.Annotations; a == nil || a.DestructiveHint == nil || *a.DestructiveHint {
		// Whether a mutating tool may destroy only marks it for the people who read the
		// plan: the gate holds every mutating tool alike. MCP's default: a tool that does
		// not say otherwise may destroy.
		spec.Destructive = true
	}
	spec.Description = describe(spec)
	return spec, true
}

// describe adds to a mutating tool's description what the gate will do with it, so the
// model plans for it instead of learning it from a refusal.
func describe(spec core.ToolSpec) string {
	note := ""
	switch {
	case spec.Kind == core.ToolReadOnly:
		return spec.Description
	case spec.Destructive:
		note = "[Destructive: it may delete or overwrite. Runs only in an accepted plan that lists it in scope.allowed_tools.]"
	default:
		note = "[Changes things: runs only in an accepted plan that lists it in scope.allowed_tools.]"
	}
	if d := strings.TrimSpace(spec.Description); d != "" {
		return d + " " + note
	}
	return note
}

func validToolName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// current returns the live session and the tool named tool, if any.
func (s *server) current(tool string) (*sdk.ClientSession, *sdk.Tool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess, s.tools[tool], s.status
}

// probe pings a server whose call timed out and says whether it answered; one that does
// not is hung: its session is closed, which withdraws its tools and restarts it. The
// ping runs in the server's lifetime, not the call's: the call's deadline is over.
func (s *server) probe(sess *sdk.ClientSession) bool {
	ctx := s.life
	pctx, cancel := context.WithTimeout(ctx, min(s.cfg.callTimeout(), 10*time.Second))
	defer cancel()
	if err := sess.Ping(pctx, nil); err == nil || ctx.Err() != nil {
		return true // alive, or plangate is stopping: nothing to restart
	}
	s.withdraw(sess, "not answering (a call timed out and a ping too)")
	return false
}

// withdraw stops offering the tools of sess at once (the next model request must not see
// them) and closes it, so the supervisor restarts the server even if the connection was
// not dead yet.
func (s *server) withdraw(sess *sdk.ClientSession, why string) {
	s.mu.Lock()
	line := ""
	if s.sess == sess {
		s.sess, s.tools, s.specs = nil, nil, nil
		if s.why == "" {
			s.why = why
		}
		s.enterLocked(StateDown)
		s.lastErr = why
		// Down from now on (the supervisor adds when it restarts): under the lock, so its
		// later status cannot be overwritten by this one.
		line = "down (" + why + ")"
		s.status = line
	}
	s.mu.Unlock()
	s.notifyStatus(line)
	go func() { _ = sess.Close() }()
}

// statusLocked sets the status line with s.mu held; it returns the line for
// notifyStatus, or "" when it did not change.
func (s *server) statusLocked(line string) string {
	if s.status == line {
		return ""
	}
	s.status = line
	return line
}

// notifyStatus tells the observer a changed line (outside s.mu: it may call back).
func (s *server) notifyStatus(line string) {
	if line != "" {
		s.m.opt.Observer.ServerStatus(s.cfg.Name, line)
	}
}

// oneLine keeps the first line of s, at most 200 characters: a status is one line.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
