package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Names of the plan tools the core handles itself.
const (
	ToolEnterPlanMode   = "enter_plan_mode"
	ToolExitPlanMode    = "exit_plan_mode"
	ToolUpdatePlan      = "update_plan"
	ToolAskUserQuestion = "ask_user_question"
	ToolPlanStatus      = "plan_status"
)

// planToolSpecs are the plan tools as the model sees them (DESIGN.md section 6).
func planToolSpecs() []ToolSpec {
	str := `{"type":"string"}`
	strs := `{"type":"array","items":{"type":"string"}}`
	return []ToolSpec{
		{Name: ToolEnterPlanMode, Kind: ToolPlan,
			Description: "Enter plan mode before changing anything: investigate read-only, then propose a plan with exit_plan_mode.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"reason":` + str + `},"additionalProperties":false}`)},
		{Name: ToolExitPlanMode, Kind: ToolPlan,
			Description: "Propose the plan to the user for approval. Your turn ends; wait for [PLAN_DECISION].",
			Parameters: json.RawMessage(`{"type":"object","required":["title","plan"],"additionalProperties":false,"properties":{` +
				`"title":{"type":"string","maxLength":80},"summary":` + str + `,` +
				`"plan":{"type":"array","minItems":1,"items":{"type":"object","required":["step"],"additionalProperties":false,"properties":{"step":` + str + `,"acceptance_criteria":` + strs + `}}},` +
				`"assumptions":` + strs + `,` +
				`"risks":{"type":"array","items":{"type":"object","required":["risk","mitigation"],"properties":{"risk":` + str + `,"mitigation":` + str + `}}},` +
				`"verification":` + strs + `,` +
				`"scope":{"type":"object","additionalProperties":false,"properties":{"allowed_paths":` + strs + `,"forbidden_paths":` + strs + `}},` +
				`"references":` + strs + `}}`)},
		{Name: ToolUpdatePlan, Kind: ToolPlan,
			Description: "Report step progress while executing an accepted plan. A step may be completed only when every acceptance criterion is listed in verified_criteria; at most one step in_progress.",
			Parameters: json.RawMessage(`{"type":"object","required":["plan"],"additionalProperties":false,"properties":{` +
				`"plan":{"type":"array","items":{"type":"object","required":["step","status"],"additionalProperties":false,"properties":{"step":` + str + `,` +
				`"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]},"acceptance_criteria":` + strs + `,"verified_criteria":` + strs + `}}},` +
				`"merge":{"type":"boolean"},"explanation":` + str + `}}`)},
		{Name: ToolAskUserQuestion, Kind: ToolPlan,
			Description: "Ask the user a question with 2-6 options. Your turn ends; the answer arrives as [QUESTION_ANSWER].",
			Parameters: json.RawMessage(`{"type":"object","required":["question","options"],"additionalProperties":false,"properties":{` +
				`"question":` + str + `,"options":{"type":"array","minItems":2,"maxItems":6,"items":{"type":"string"}},"allow_freetext":{"type":"boolean"}}}`)},
		{Name: ToolPlanStatus, Kind: ToolPlan,
			Description: "Show the session's phase, the current plan and its steps.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
	}
}

func (e *Engine) toolSpecs() []ToolSpec {
	specs := planToolSpecs()
	if e.d.Tools != nil {
		specs = append(specs, e.d.Tools.Tools()...)
	}
	return specs
}

// callTool runs one tool call through the gate.
func (t *turnState) callTool(ctx context.Context, call ToolCall) toolResult {
	if a := strings.TrimSpace(string(call.Args)); strings.HasPrefix(a, `"`) {
		// A provider passes arguments that are not valid JSON through as a JSON string.
		var raw string
		_ = json.Unmarshal(call.Args, &raw)
		return toolError("the arguments of %s are not valid JSON (%s); send one JSON object that matches the tool's schema", call.Name, oneLine(raw))
	}
	switch call.Name {
	case ToolEnterPlanMode, ToolExitPlanMode, ToolUpdatePlan, ToolAskUserQuestion:
		return t.planTool(ctx, call)
	case ToolPlanStatus:
		return t.planStatus(ctx)
	}
	var spec *ToolSpec
	if t.e.d.Tools != nil {
		for _, s := range t.e.d.Tools.Tools() {
			if s.Name == call.Name {
				spec = &s
				break
			}
		}
	}
	if spec == nil {
		names := make([]string, 0)
		for _, s := range t.e.toolSpecs() {
			names = append(names, s.Name)
		}
		return toolError("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
	}
	if spec.Kind != ToolReadOnly {
		if res, ok := t.gateMutation(ctx, *spec, call); !ok {
			return res
		}
	}
	out, err := t.e.d.Tools.Call(ctx, t.e.workspace(t.sess), call.Name, call.Args)
	if err != nil {
		return toolError("%s", err.Error())
	}
	return toolResult{content: out}
}

// gateMutation is the default-deny gate for every tool that is not read-only.
func (t *turnState) gateMutation(ctx context.Context, spec ToolSpec, call ToolCall) (toolResult, bool) {
	if !t.e.cfg.PlanMode {
		return toolResult{}, true
	}
	if t.sess.Phase != PhaseExecuting {
		if !t.gateNoticed {
			// Say it once per turn in the chat too: people should see the gate hold.
			t.gateNoticed = true
			t.notice(ctx, "Blocked %s: nothing may change before a plan is accepted (phase: %s).", describeCall(spec.Name, call.Args), t.sess.Phase)
		}
		return toolError("%s is refused in phase %s: nothing may change before a plan is accepted. Investigate with read-only tools, then propose a plan with exit_plan_mode and wait for the decision.", spec.Name, t.sess.Phase), false
	}
	p, err := t.currentPlan(ctx)
	if err != nil || p == nil {
		return toolError("no accepted plan is loaded; %s refused", spec.Name), false
	}
	paths, err := t.e.d.Tools.WritePaths(call.Name, call.Args)
	if err != nil {
		return toolError("%s", err.Error()), false
	}
	for _, p0 := range paths {
		if why, ok := inScope(p.Body.Scope, p0); !ok {
			msg := fmt.Sprintf("%s on %q refused: %s", spec.Name, p0, why)
			return toolResult{content: "error: " + msg, isError: true,
				stop: fmt.Sprintf("Stopped: %s. The accepted plan v%d does not allow it; /plan revise <feedback> to change the plan.", msg, p.Version)}, false
		}
	}
	return toolResult{}, true
}

// describeCall names a tool call for people: the tool and, when it has one, its path.
func describeCall(name string, args json.RawMessage) string {
	var a struct {
		Path string   `json:"path"`
		Argv []string `json:"argv"`
	}
	_ = json.Unmarshal(args, &a)
	switch {
	case a.Path != "":
		return fmt.Sprintf("%s on %s", name, oneLine(a.Path))
	case len(a.Argv) > 0:
		return fmt.Sprintf("%s %s", name, oneLine(strings.Join(a.Argv, " ")))
	}
	return name
}

// inScope checks a workspace-relative path against a plan's scope.
func inScope(s Scope, p string) (string, bool) {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if p == "." && len(s.ForbiddenPaths) > 0 {
		// "." is a call that may change anything (run_command): it cannot honour a
		// forbidden path, so a plan that forbids any path does not allow it.
		return fmt.Sprintf("it may change any file, and the plan forbids %s", strings.Join(s.ForbiddenPaths, ", ")), false
	}
	for _, f := range s.ForbiddenPaths {
		if globMatch(f, p) {
			return fmt.Sprintf("the path is forbidden by the plan's scope (%s)", f), false
		}
	}
	if len(s.AllowedPaths) == 0 {
		return "", true
	}
	for _, a := range s.AllowedPaths {
		if globMatch(a, p) {
			return "", true
		}
	}
	return fmt.Sprintf("the path is outside the plan's scope (allowed: %s)", strings.Join(s.AllowedPaths, ", ")), false
}

// globMatch matches path.Match patterns, plus "dir/**" for everything below dir and a
// plain directory name for everything below it.
func globMatch(pattern, p string) bool {
	pattern = path.Clean(strings.TrimPrefix(pattern, "./"))
	if pattern == "**" || pattern == "." {
		return true // the whole workspace
	}
	if rest, ok := strings.CutSuffix(pattern, "/**"); ok {
		return p == rest || strings.HasPrefix(p, rest+"/")
	}
	if ok, _ := path.Match(pattern, p); ok {
		return true
	}
	return strings.HasPrefix(p, pattern+"/")
}

// toolResult is the outcome of one tool call.
type toolResult struct {
	content string
	isError bool
	endTurn bool   // the turn ends after this call (a plan or question was posted)
	stop    string // a stop condition: report this to the chat and end the turn
	// outcome is a plan tool's transition; the turn commits it with the call's transcript
	// entries (see applyTool).
	outcome *Outcome
}

func toolError(format string, args ...any) toolResult {
	return toolResult{content: "error: " + fmt.Sprintf(format, args...), isError: true}
}

// planTool turns a plan tool call into a trigger, applies it and writes the files of a
// new plan version, so the result the model gets says whether the plan was saved.
func (t *turnState) planTool(ctx context.Context, call ToolCall) toolResult {
	trig := map[string]Trigger{ToolEnterPlanMode: TrigEnter, ToolExitPlanMode: TrigPropose,
		ToolUpdatePlan: TrigUpdate, ToolAskUserQuestion: TrigAsk}[call.Name]
	if trig == TrigPropose && t.sess.AutoApprove {
		trig = TrigAutoPropose
	}
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return toolError("could not load the current plan: %v", err)
	}
	in := Input{Now: t.e.d.Now(), Actor: AgentActor, Rules: t.e.rules(), Args: call.Args}
	if in.IDs, err = t.e.newIDs(trig); err != nil {
		return toolError("%v", err)
	}
	o, err := Apply(t.sess, cur, trig, in)
	if err != nil {
		return toolError("%v", err)
	}
	if err := t.prepare(o); err != nil {
		return toolError("the plan could not be saved (%v); try again", errors.Unwrap(err))
	}
	res := toolResult{outcome: &o}
	if o.Tool != nil {
		res.content, res.endTurn = o.Tool.Content, o.Tool.EndTurn
	}
	res.isError = o.Refused() && !o.Refusal.Benign
	return res
}

func (t *turnState) planStatus(ctx context.Context) toolResult {
	type stepOut struct {
		Step   string     `json:"step"`
		Status StepStatus `json:"status"`
	}
	out := struct {
		Phase       Phase     `json:"phase"`
		AutoApprove bool      `json:"auto_approve"`
		Plan        any       `json:"plan"`
		Question    *Question `json:"pending_question"`
	}{Phase: t.sess.Phase, AutoApprove: t.sess.AutoApprove, Question: t.sess.Question}
	if p, err := t.currentPlan(ctx); err == nil && p != nil {
		steps := make([]stepOut, 0, len(p.Body.Steps))
		for _, s := range p.Body.Steps {
			steps = append(steps, stepOut{s.Text, s.Status})
		}
		out.Plan = map[string]any{"version": p.Version, "title": p.Body.Title, "status": p.Status, "steps": steps}
	}
	b, _ := json.Marshal(out)
	return toolResult{content: string(b)}
}
