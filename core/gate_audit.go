package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// What the gate tells people: every refused and every executed mutating call is an audit
// row, and the refusals of a turn are listed in one notice.

// Audit kinds of the gate.
const (
	EventToolBlocked EventKind = "tool_blocked" // a mutating call the gate refused (scope stops included)
	EventToolRan     EventKind = "tool_ran"     // a mutating call that was executed
)

// ToolAudit is the Detail of a tool_blocked or tool_ran row, as JSON.
type ToolAudit struct {
	Tool    string   `json:"tool"`
	Paths   []string `json:"paths,omitempty"`
	Call    string   `json:"call,omitempty"` // the call in words ("write_file on README.md")
	Outcome string   `json:"outcome"`        // ok, failed, refused
	Why     string   `json:"why,omitempty"`  // why it was refused, or how it failed
}

// turnGate is what the gate keeps while a job runs the agent's turns.
type turnGate struct {
	blocked []blockedCall // refusals not shown in the chat yet
	// chained: the running turn follows another turn of the same job, not a person's
	// message (see autoHeld).
	chained bool
}

// blockedCall is one refused call, for the notice.
type blockedCall struct{ call, why string }

// blocked records a refused call: an audit row now, and an entry of the turn's notice
// unless the refusal says so itself (a scope stop).
func (t *turnState) blocked(ctx context.Context, in gateInput, why string, list bool) {
	desc := describeCall(in.call.Name, in.call.Args)
	t.e.obs.obs.ToolCall(in.call.Name, "blocked")
	t.audit(ctx, EventToolBlocked, in.plan, ToolAudit{Tool: in.call.Name, Paths: in.paths, Call: desc, Outcome: "refused", Why: why})
	if list {
		t.gate.blocked = append(t.gate.blocked, blockedCall{call: desc, why: why})
	}
}

// ran records an executed mutating call and how it ended.
func (t *turnState) ran(ctx context.Context, in gateInput, err error) {
	a := ToolAudit{Tool: in.call.Name, Paths: in.paths, Call: describeCall(in.call.Name, in.call.Args), Outcome: "ok"}
	if err != nil {
		a.Outcome, a.Why = "failed", oneLine(err.Error())
	}
	t.e.obs.obs.ToolCall(in.call.Name, toolOutcome(err))
	t.audit(ctx, EventToolRan, in.plan, a)
}

// audit commits one gate row, naming the accepted plan in force (nil: none). It records
// no decision, so it need not wait for the disk; a failure is logged and never stops the
// turn (the call's result stands either way).
func (t *turnState) audit(ctx context.Context, kind EventKind, plan *Plan, a ToolAudit) {
	detail, err := json.Marshal(a)
	if err != nil {
		detail = []byte(a.Tool) // only strings: marshalling cannot fail
	}
	ev := Event{SessionID: t.sess.ID, Kind: kind, Actor: AgentActor, Channel: t.sess.Address.Channel,
		Detail: string(detail), At: t.e.d.Now()}
	if plan != nil {
		ev.PlanID, ev.PlanVersion = plan.ID, plan.Version
	}
	if err := t.commit(ctx, Change{SessionID: t.sess.ID, Events: []Event{ev}, Lazy: true}); err != nil {
		t.e.d.Log.Error("recording a tool call", "session", t.sess.ID, "tool", a.Tool, "err", err)
	}
}

// sayBlocked sends the one notice that lists the calls the gate refused since the last
// one, if any.
func (t *turnState) sayBlocked(ctx context.Context) {
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

// autoHeld says why auto-approve may not take a plan the agent proposes now, or "": it
// approves only plans proposed in answer to a person's message, never in a turn the
// agent's own work, a restart or a reminder started. Auto-approve never chains.
func (t *turnState) autoHeld() string {
	switch {
	case t.j.sys != nil:
		return "no person's message started this turn (a restart or a reminder did)"
	case t.gate.chained:
		return "no person's message started this turn (it followed the agent's previous turn)"
	}
	return ""
}
