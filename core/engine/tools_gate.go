package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Tool calls: plan tools become triggers of Apply, workspace tools go through the gate.

// callTool runs one tool call through the gate.
func (t *jobRun) callTool(ctx context.Context, call core.ToolCall) toolResult {
	if a := strings.TrimSpace(string(call.Args)); strings.HasPrefix(a, `"`) {
		// A provider passes arguments that are not valid JSON through as a JSON string.
		var raw string
		_ = json.Unmarshal(call.Args, &raw)
		return toolError("the arguments of %s are not valid JSON (%s); send one JSON object that matches the tool's schema", call.Name, machine.OneLine(raw))
	}
	switch call.Name {
	case ToolEnterPlanMode, ToolExitPlanMode, ToolUpdatePlan, ToolAskUserQuestion:
		return t.planTool(ctx, call)
	case ToolPlanStatus:
		return t.planStatus(ctx)
	}
	var spec *core.ToolSpec
	if t.e.d.Tools != nil {
		for _, s := range t.e.d.Tools.Tools() {
			if s.Name == call.Name {
				spec = &s
				break
			}
		}
	}
	if spec == nil {
		if res, ok := t.withdrawn(call); ok {
			return res
		}
		var names []string
		for _, s := range t.e.toolSpecs() {
			names = append(names, s.Name)
		}
		return toolError("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
	}
	if spec.Kind != core.ToolReadOnly {
		gi, res, ok := t.gateMutation(ctx, *spec, call)
		if !ok {
			return res
		}
		return t.runMutating(ctx, gi, call) // re-read, recorded, audited: see toolruns.go
	}
	if _, ok := t.secretCalls[call.ID]; ok { // a read-only MCP tool would get a secret
		_, res, _ := t.guarded(ctx, gateInput{sess: t.sess, spec: *spec, call: call, rule: RuleReadOnly}, toolResult{}, true)
		return res
	}
	start := t.e.d.Now()
	out, err := t.e.d.Tools.Call(ctx, t.e.workspace(t.sess), call.Name, call.Args)
	t.e.obs.obs.ToolCall(call.Name, toolOutcome(err)) // read-only calls count too (MCP's included)
	var aerr error
	if IsMCPTool(call.Name) {
		t.serverDown(err)
		aerr = t.auditReadOnly(ctx, call, err, t.e.d.Now().Sub(start))
	}
	return callResult(call, out, err, aerr)
}

// callResult is what the model gets of an executed call: its output or error, or, when
// its audit row could not be stored (aerr), the withheld notice.
func callResult(call core.ToolCall, out string, err, aerr error) toolResult {
	switch {
	case aerr != nil:
		return withheld(call, aerr)
	case err != nil:
		return toolError("%s", err.Error())
	}
	return toolResult{content: out}
}

// withdrawn answers a call of a tool whose server is down (its tools are not offered):
// the model learns the server's state, the chat that the server stopped.
func (t *jobRun) withdrawn(call core.ToolCall) (toolResult, bool) {
	ws, ok := t.e.d.Tools.(ToolServers)
	if !ok {
		return toolResult{}, false
	}
	srv, status, ok := ws.Withdrawn(call.Name)
	if !ok {
		return toolResult{}, false
	}
	msg := fmt.Sprintf("MCP server %s is not available (%s); its tools are withdrawn, go on without them", srv, status)
	t.serverDown(&core.ToolServerDown{Server: srv, Msg: msg})
	return toolError("%s", msg), true
}

// gateMutation is the default-deny gate for every tool that is not read-only: it loads
// what gate needs and lets it decide. A refusal is an audit row and is listed in the
// turn's notice of blocked calls (a scope stop has its own). It returns what the gate saw,
// for the audit row of the call's run.
func (t *jobRun) gateMutation(ctx context.Context, spec core.ToolSpec, call core.ToolCall) (gateInput, toolResult, bool) {
	in := gateInput{sess: t.sess, spec: spec, call: call}
	in.paths, in.pathsErr = t.e.d.Tools.WritePaths(call.Name, call.Args)
	if !t.e.cfg.PlanMode {
		in.rule = RulePlanOff
		return t.guarded(ctx, in, toolResult{}, true)
	}
	if t.sess.Phase == core.PhaseExecuting {
		var err error
		if in.plan, err = t.currentPlan(ctx); err != nil {
			in.plan = nil // "no accepted plan is loaded"
		}
	}
	in.rule = gateRule(in)
	res, why, ok := gate(in)
	if !ok {
		t.blocked(ctx, in, why, res.stop.text == "")
	}
	return t.guarded(ctx, in, res, ok)
}

// gateInput is what the gate decides on.
type gateInput struct {
	sess     core.Session
	spec     core.ToolSpec
	call     core.ToolCall
	plan     *core.Plan // the accepted plan, when executing
	paths    []string
	pathsErr error
	rule     string // the gate's rule that decides the call (Rule*), for the audit row
}

// The gate's rules, named in the audit rows (ToolAudit.Gate).
const (
	RuleReadOnly     = "read_only"     // a read-only tool: runs in every phase
	RulePlanOff      = "plan_off"      // plan mode is off: nothing is gated
	RulePhase        = "phase"         // no accepted plan yet: every change is refused
	RuleNoPlan       = "no_plan"       // executing, but the accepted plan could not be loaded
	RuleAllowedTools = "allowed_tools" // an MCP tool: the plan's scope.allowed_tools must name it
	RuleScope        = "scope"         // a workspace tool: its paths must be in the plan's scope
)

// gateRule says which rule of gate decides in.
func gateRule(in gateInput) string {
	switch {
	case in.sess.Phase != core.PhaseExecuting:
		return RulePhase
	case in.plan == nil:
		return RuleNoPlan
	case IsMCPTool(in.spec.Name):
		return RuleAllowedTools
	}
	return RuleScope
}

// gate decides whether a mutating call may run in plan mode: only while executing an
// accepted plan, and only within its scope. A refusal is the tool error and why, in words
// for the chat and the audit.
func gate(in gateInput) (res toolResult, why string, ok bool) {
	spec, s := in.spec, in.sess
	if s.Phase != core.PhaseExecuting {
		why = fmt.Sprintf("nothing may change before a plan is accepted (phase: %s)", s.Phase)
		return toolError("%s is refused in phase %s: nothing may change before a plan is accepted. Investigate with read-only tools, then propose a plan with exit_plan_mode and wait for the decision.", spec.Name, s.Phase), why, false
	}
	p := in.plan
	if p == nil {
		return toolError("no accepted plan is loaded; %s refused", spec.Name), "no accepted plan is loaded", false
	}
	if IsMCPTool(spec.Name) {
		// An MCP tool changes no path the scope could check: the plan must name it.
		if !slices.Contains(p.Body.Scope.AllowedTools, spec.Name) {
			msg := fmt.Sprintf("%s refused: it is not in the accepted plan's scope.allowed_tools", spec.Name)
			return outOfScope(plan.StopForbiddenTool, msg, p.Version), msg, false
		}
		return toolResult{}, "", true
	}
	if in.pathsErr != nil {
		return toolError("%s", in.pathsErr.Error()), machine.OneLine(in.pathsErr.Error()), false
	}
	for _, p0 := range in.paths {
		if why, ok := machine.CheckScope(p.Body.Scope, p0); !ok {
			msg := fmt.Sprintf("%s on %q refused: %s", spec.Name, p0, why)
			return outOfScope(plan.StopForbiddenPath, msg, p.Version), msg, false
		}
	}
	return toolResult{}, "", true
}

// outOfScope refuses a call the accepted plan version does not allow, stopping the turn.
func outOfScope(kind plan.StopKind, msg string, version int) toolResult {
	return toolResult{content: "error: " + msg, isError: true,
		stop: halt{kind, fmt.Sprintf("Stopped: %s. The accepted plan v%d does not allow it; /plan revise <feedback> to change the plan.", msg, version)}}
}

// IsMCPTool says whether name is an MCP server's tool (<server>__<tool>); no workspace
// tool has "__" in its name.
func IsMCPTool(name string) bool { return strings.Contains(name, "__") }

// toolResult is the outcome of one tool call.
type toolResult struct {
	content string
	isError bool
	endTurn bool // the turn ends after this call (a plan or question was posted)
	stop    halt // a stop condition: report it to the chat and end the turn
	// outcome is a plan tool's transition; the turn commits it with the call's transcript
	// entries (see applyTool).
	outcome *machine.Outcome
}

func toolError(format string, args ...any) toolResult {
	return toolResult{content: "error: " + fmt.Sprintf(format, args...), isError: true}
}

// planTool turns a plan tool call into a trigger, applies it and writes the files of a
// new plan version, so the result the model gets says whether the plan was saved.
func (t *jobRun) planTool(ctx context.Context, call core.ToolCall) toolResult {
	trig := map[string]machine.Trigger{ToolEnterPlanMode: machine.TrigEnter, ToolExitPlanMode: machine.TrigPropose,
		ToolUpdatePlan: machine.TrigUpdate, ToolAskUserQuestion: machine.TrigAsk}[call.Name]
	if trig == machine.TrigPropose && t.sess.AutoApprove && t.autoHeld() == "" {
		trig = machine.TrigAutoPropose
	}
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return toolError("could not load the current plan: %v", err)
	}
	in := machine.Input{Now: t.e.d.Now(), Actor: core.AgentActor, Rules: t.e.rules(), Args: call.Args}
	if t.autoHeld() == "" {
		in.Requester = senderKey(t.msg()) // a person's message started this turn
	}
	in.Asked = t.askedSoFar()
	if trig == machine.TrigPropose && t.sess.AutoApprove {
		in.AutoHeld = t.autoHeld()
	}
	in.Unattended = t.autoHeld()
	if in.IDs, err = machine.DrawIDs(t.e.d.Random, trig); err != nil {
		return toolError("%v", err)
	}
	t.withTree(ctx, trig, cur, &in)
	if trig == machine.TrigUpdate && t.completesChecked(cur, call) {
		var stop halt
		if in.Checks, cur, stop, err = t.runChecksOwned(ctx, cur); err != nil {
			return toolError("plangate could not run the plan's verification (%v); the plan stays open", err)
		}
		if stop.kind != "" {
			res := toolError("the plan's verification changed a path the plan's scope forbids; the plan stays open and a person has been asked to look")
			res.stop = stop
			return res
		}
	}
	o, err := machine.Apply(t.sess, cur, trig, in)
	if err != nil {
		return toolError("%v", err)
	}
	if err := t.prepare(o); err != nil {
		return toolError("the plan could not be saved (%v); try again", errors.Unwrap(err))
	}
	if !o.Refused() && o.Tool != nil && o.Tool.EndTurn {
		// The plan or question is the turn's last word: what the gate blocked comes first.
		t.sayBlocked(ctx)
	}
	res := toolResult{outcome: &o}
	if o.Tool != nil {
		res.content, res.endTurn = o.Tool.Content, o.Tool.EndTurn
		res.stop = halt{o.Tool.Stop, o.Tool.StopText}
	}
	res.isError = o.Refused() && !o.Refusal.Benign || o.Tool != nil && o.Tool.Error
	return res
}

// CombineToolboxes offers the tools of several toolboxes as one (the workspace tools and
// the MCP servers' tools): a call goes to the toolbox that lists the name now. Names
// must not collide; MCP names cannot collide with workspace tools as they contain "__".
// nil toolboxes are skipped.
func CombineToolboxes(boxes ...core.Toolbox) core.Toolbox {
	var ts toolboxes
	for _, b := range boxes {
		if b != nil {
			ts = append(ts, b)
		}
	}
	return ts
}

type toolboxes []core.Toolbox

// ToolServers is what a Toolbox may implement to tell a tool that is not offered because
// its server is down (an MCP server that failed to start or died) from one that does not
// exist: the model gets the server's state instead of "unknown tool", and the chat hears
// that the server stopped.
type ToolServers interface {
	// Withdrawn reports the server of tool and its state when the server is configured
	// but not up.
	Withdrawn(tool string) (server, status string, ok bool)
}

func (ts toolboxes) Tools() []core.ToolSpec {
	var specs []core.ToolSpec
	for _, b := range ts {
		specs = append(specs, b.Tools()...)
	}
	return specs
}

// owner is the toolbox that offers name; the list is asked each time because an MCP
// server's tools come and go.
func (ts toolboxes) owner(name string) core.Toolbox {
	for _, b := range ts {
		for _, s := range b.Tools() {
			if s.Name == name {
				return b
			}
		}
	}
	return nil
}

func (ts toolboxes) Call(ctx context.Context, ws core.Workspace, name string, args json.RawMessage) (string, error) {
	if b := ts.owner(name); b != nil {
		return b.Call(ctx, ws, name, args)
	}
	return "", fmt.Errorf("no tool %q is offered now", name)
}

func (ts toolboxes) WritePaths(name string, args json.RawMessage) ([]string, error) {
	if b := ts.owner(name); b != nil {
		return b.WritePaths(name, args)
	}
	return nil, fmt.Errorf("no tool %q is offered now", name)
}

func (ts toolboxes) Withdrawn(tool string) (string, string, bool) {
	for _, b := range ts {
		if w, ok := b.(ToolServers); ok {
			if srv, st, ok := w.Withdrawn(tool); ok {
				return srv, st, true
			}
		}
	}
	return "", "", false
}

// Fingerprint is the first toolbox's that keeps fingerprints (the workspace tools'); nil
// when none does.
func (ts toolboxes) Fingerprint(ctx context.Context, ws core.Workspace) (*plan.Tree, error) {
	for _, b := range ts {
		if f, ok := b.(core.Fingerprinter); ok {
			return f.Fingerprint(ctx, ws)
		}
	}
	return nil, nil
}

func (ts toolboxes) LinesChanged(ctx context.Context, a, b *plan.Tree, paths []string) (int, error) {
	for _, x := range ts {
		if f, ok := x.(core.Fingerprinter); ok {
			return f.LinesChanged(ctx, a, b, paths)
		}
	}
	return 0, nil
}

func (ts toolboxes) LineCounts(ctx context.Context, a, b *plan.Tree, paths []string) ([]plan.FileLines, error) {
	for _, x := range ts {
		if f, ok := x.(core.Fingerprinter); ok {
			return f.LineCounts(ctx, a, b, paths)
		}
	}
	return nil, nil
}

// Restore is the first toolbox's that can put files back (the workspace tools').
func (ts toolboxes) Restore(ctx context.Context, ws core.Workspace, was, left *plan.Tree, paths []string) (plan.Restore, error) {
	for _, x := range ts {
		if r, ok := x.(core.Restorer); ok {
			return r.Restore(ctx, ws, was, left, paths)
		}
	}
	return plan.Restore{Unkept: paths}, nil
}
