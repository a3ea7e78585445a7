package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// What the gate tells people: every refused and executed mutating call (and every read-only
// MCP call) is an audit row, and a turn's refusals are listed in one notice. An executed
// MCP call's row is durable before its result goes anywhere: the server acts outside the
// workspace and the tool-run ledger, so the row is the only record of it.

// Audit kinds of the gate.
const (
	EventToolBlocked core.EventKind = "tool_blocked" // a mutating call the gate refused (scope stops included)
	EventToolRan     core.EventKind = "tool_ran"     // a mutating call (or a read-only MCP call) that was executed
)

// ToolAudit is the Detail of a tool_blocked or tool_ran row, as JSON.
type ToolAudit struct {
	Tool    string   `json:"tool"`
	Server  string   `json:"server,omitempty"` // the MCP server of an MCP tool
	Paths   []string `json:"paths,omitempty"`
	Call    string   `json:"call,omitempty"` // the call in words ("write_file on README.md")
	Gate    string   `json:"gate,omitempty"` // the gate's rule that decided (Rule*)
	Outcome string   `json:"outcome"`        // ok, failed, refused
	Why     string   `json:"why,omitempty"`  // why it was refused, or how it failed
	// DurationMS is how long an executed call took, by the engine's clock.
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// ExitCode is how an executed run_command's program exited (omitted when it did not
	// run to an exit), and Step the executing plan's step in progress then.
	ExitCode *int   `json:"exit_code,omitempty"`
	Step     string `json:"step,omitempty"`
}

// newToolAudit starts the audit of a call of tool.
func newToolAudit(call core.ToolCall, rule string) ToolAudit {
	a := ToolAudit{Tool: call.Name, Call: describeCall(call.Name, call.Args), Gate: rule}
	if srv, _, ok := strings.Cut(call.Name, "__"); ok {
		a.Server = srv // only MCP tools have "__" in their names
	}
	return a
}

// finished records how an executed call ended and how long it took.
func (a *ToolAudit) finished(err error, d time.Duration) {
	a.Outcome = "ok"
	if err != nil {
		a.Outcome, a.Why = "failed", machine.OneLine(err.Error())
	}
	ms := d.Milliseconds()
	a.DurationMS = &ms
}

// turnGate is what the gate keeps while a job runs the agent's turns.
type turnGate struct {
	blocked []blockedCall   // refusals not shown in the chat yet
	inForce *core.Plan      // the accepted plan the rows of read-only MCP calls name (see planInForce)
	notices []core.Reply    // notices for the chat, delivered through the outbox with the next flush
	down    map[string]bool // tool servers whose stop the chat was told of in this job
	// chained: the running turn follows another turn of the same job, not a person's
	// message (see autoHeld).
	chained bool
}

// blockedCall is one refused call, for the notice.
type blockedCall struct{ call, why string }

// blocked records a refused call: an audit row now, and an entry of the turn's notice
// unless the refusal says so itself (a scope stop).
func (t *jobRun) blocked(ctx context.Context, in gateInput, why string, list bool) {
	a := newToolAudit(in.call, in.rule)
	a.Paths, a.Outcome, a.Why = in.paths, "refused", why
	t.e.obs.obs.ToolCall(in.call.Name, "blocked")
	t.audit(ctx, t.toolEvent(EventToolBlocked, in.plan, a))
	if list {
		t.gate.blocked = append(t.gate.blocked, blockedCall{call: a.Call, why: why})
	}
}

// ran records an executed mutating call, how it ended and how long it took, with a
// command's exit code read from its output out. An MCP call's row is durable when ran
// returns nil; an error means the result must be withheld.
func (t *jobRun) ran(ctx context.Context, in gateInput, out string, err error, d time.Duration) error {
	a := newToolAudit(in.call, in.rule)
	a.Paths = in.paths
	a.finished(err, d)
	if in.call.Name == "run_command" && err == nil {
		a.ExitCode = exitCode(out)
	}
	if p := t.checked; p != nil {
		a.Step = inProgress(p.Body.Steps)
	}
	t.e.obs.obs.ToolCall(in.call.Name, toolOutcome(err))
	ev := t.toolEvent(EventToolRan, in.plan, a)
	if IsMCPTool(in.call.Name) {
		return t.auditMCP(ctx, ev)
	}
	t.audit(ctx, ev)
	return nil
}

// exitCode reads the "exit code: N" line run_command's result starts with (after the
// "$ argv" line); nil when there is none.
func exitCode(out string) *int {
	for i, line := range strings.SplitN(out, "\n", 3) {
		if i > 1 {
			break
		}
		if rest, ok := strings.CutPrefix(line, "exit code: "); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				return &n
			}
		}
	}
	return nil
}

// auditReadOnly records an executed read-only MCP call, durably (see auditMCP).
func (t *jobRun) auditReadOnly(ctx context.Context, call core.ToolCall, err error, d time.Duration) error {
	a := newToolAudit(call, RuleReadOnly)
	a.finished(err, d)
	return t.auditMCP(ctx, t.toolEvent(EventToolRan, t.planInForce(ctx), a))
}

// auditMCP commits the row of an executed MCP call durably, before the result is handed to
// the turn (a crash before the round's flush must not leave it unrecorded), even when the
// turn's context is cancelled: the call ran. A failure is logged and returned.
func (t *jobRun) auditMCP(ctx context.Context, ev core.Event) error {
	err := t.commit(context.WithoutCancel(ctx), core.Change{SessionID: t.sess.ID, Events: []core.Event{ev}})
	if err != nil {
		t.e.d.Log.Error("recording an MCP call", "session", t.sess.ID, "err", err)
	}
	return err
}

// withheld is the tool error that replaces the result of an MCP call whose audit row
// could not be stored: the model does not act on what is not on record.
func withheld(call core.ToolCall, err error) toolResult {
	return toolError("%s ran, but plangate could not record it (%v), so its result is withheld; do not call it again before the store works", call.Name, machine.OneLine(err.Error()))
}

// planInForce is the accepted plan a read-only row names (nil: none, or it cannot be
// loaded), read once per plan: a plan id is one version, so its id and version never change.
func (t *jobRun) planInForce(ctx context.Context) *core.Plan {
	if t.sess.Phase != core.PhaseExecuting {
		return nil
	}
	if p := t.gate.inForce; p != nil && p.ID == t.sess.PlanID {
		return p
	}
	p, err := t.currentPlan(ctx)
	if err != nil {
		return nil
	}
	t.gate.inForce = p
	return p
}

// toolEvent is the audit row of one call, naming the accepted plan in force (nil: none).
func (t *jobRun) toolEvent(kind core.EventKind, plan *core.Plan, a ToolAudit) core.Event {
	detail, err := json.Marshal(a)
	if err != nil {
		detail = []byte(a.Tool) // strings and a number: marshalling cannot fail
	}
	ev := core.Event{SessionID: t.sess.ID, Kind: kind, Actor: core.AgentActor, Channel: t.sess.Address.Channel,
		Detail: string(detail), At: t.e.d.Now()}
	if plan != nil {
		ev.PlanID, ev.PlanVersion = plan.ID, plan.Version
	}
	return ev
}

// audit commits one gate row. It records no decision, so it need not wait for the disk;
// a failure is logged and never stops the turn (the call's result stands either way).
func (t *jobRun) audit(ctx context.Context, ev core.Event) {
	if err := t.commit(ctx, core.Change{SessionID: t.sess.ID, Events: []core.Event{ev}, Lazy: true}); err != nil {
		t.e.d.Log.Error("recording a tool call", "session", t.sess.ID, "event", ev.Kind, "err", err)
	}
}

// serverDown tells the chat, once per job and server, that a tool server stopped during
// a call (see ToolServerDown); the turn goes on without its tools.
func (t *jobRun) serverDown(err error) {
	var down *core.ToolServerDown
	if !errors.As(err, &down) || t.gate.down[down.Server] {
		return
	}
	if t.gate.down == nil {
		t.gate.down = map[string]bool{}
	}
	t.gate.down[down.Server] = true
	t.e.d.Log.Warn("tool server stopped during a call", "session", t.sess.ID, "server", down.Server, "err", machine.OneLine(down.Msg))
	t.gate.notices = append(t.gate.notices, noticef("MCP server %s stopped; its tools are withdrawn, restarting.", down.Server))
}

// planServersDown tells the chat when an allowed tool of the plan being executed belongs to
// a tool server that is down: the agent will not find it.
func (t *jobRun) planServersDown(ctx context.Context) {
	ws, ok := t.e.d.Tools.(ToolServers)
	if !ok || t.sess.Phase != core.PhaseExecuting {
		return
	}
	p := t.planInForce(ctx)
	if p == nil {
		return
	}
	for _, tool := range p.Body.Scope.AllowedTools {
		if srv, status, down := ws.Withdrawn(tool); down {
			t.serverDown(&core.ToolServerDown{Server: srv, Msg: fmt.Sprintf("MCP server %s is %s", srv, status)})
		}
	}
}

// takeNotices hands the pending notices to the flush that queues them in the outbox.
func (t *jobRun) takeNotices() []core.Reply {
	rs := t.gate.notices
	t.gate.notices = nil
	return rs
}

// flushPending queues the notices no flush took (a turn that ended without one) and
// delivers them.
func (t *jobRun) flushPending(ctx context.Context) {
	rs := t.takeNotices()
	if len(rs) == 0 {
		return
	}
	ch := t.withRows(core.Change{SessionID: t.sess.ID, Lazy: true}, rs)
	if err := t.commit(ctx, ch); err != nil {
		t.e.d.Log.Error("recording notices", "session", t.sess.ID, "err", err)
	}
	t.sayCommitted(ctx, ch) // rows the commit did not store (ID 0) are sent directly
}

// sayBlocked sends the one notice that lists the calls the gate refused since the last
// one, if any.
func (t *jobRun) sayBlocked(ctx context.Context) {
	if len(t.gate.blocked) == 0 {
		return
	}
	text := blockedNotice(t.gate.blocked)
	t.gate.blocked = nil
	t.notice(ctx, "%s", text)
}

// blockedNotice lists refused calls: one line for one call, else a line per distinct call
// (with how often it was tried), under the shared reason when there is one.
func blockedNotice(bs []blockedCall) string {
	if len(bs) == 1 {
		return fmt.Sprintf("Blocked %s: %s.", bs[0].call, bs[0].why)
	}
	var order []blockedCall
	times := map[blockedCall]int{}
	same := true
	for _, b := range bs {
		if times[b] == 0 {
			order = append(order, b)
		}
		times[b]++
		same = same && b.why == bs[0].why
	}
	var lines []string
	if same {
		lines = append(lines, fmt.Sprintf("Blocked %d calls: %s.", len(bs), bs[0].why))
	} else {
		lines = append(lines, fmt.Sprintf("Blocked %d calls:", len(bs)))
	}
	for _, b := range order {
		line := "- " + b.call
		if !same {
			line += ": " + b.why
		}
		if n := times[b]; n > 1 {
			line += fmt.Sprintf(" (%d times)", n)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// autoHeld says why auto-approve may not take a plan the agent proposes now, or "": only
// a plan proposed in answer to a person's message is auto-approved; it never chains.
func (t *jobRun) autoHeld() string {
	switch {
	case t.j.sys != nil:
		return "no person's message started this turn (a restart or a reminder did)"
	case t.gate.chained:
		return "no person's message started this turn (it followed the agent's previous turn)"
	}
	return ""
}
