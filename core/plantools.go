package core

import (
	"context"
	"encoding/json"
	"fmt"
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
	case ToolEnterPlanMode:
		return t.enterPlanMode()
	case ToolExitPlanMode:
		return t.exitPlanMode(ctx, call.Args)
	case ToolUpdatePlan:
		return t.updatePlan(ctx, call.Args)
	case ToolAskUserQuestion:
		return t.askUserQuestion(call.Args)
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
	p, ok, err := t.currentPlan(ctx)
	if err != nil || !ok {
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

// inScope checks a workspace-relative path against a plan's scope (see checkScope).
func inScope(s Scope, p string) (string, bool) {
	return checkScope(s, p)
}

func (t *turnState) enterPlanMode() toolResult {
	if !t.e.cfg.PlanMode {
		return toolError("plan mode is disabled in this gateway")
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigEnter)
	if !ok {
		return toolResult{content: fmt.Sprintf("Already in plan mode (phase: %s).", t.sess.Phase)}
	}
	next := t.sess
	next.Phase = to
	return toolResult{
		content: "Plan mode is on. Investigate with read-only tools, then propose a plan with exit_plan_mode.",
		change: &stateChange{next: next, ch: Change{Events: []Event{t.event(EventEntered, "agent", nil, "enter_plan_mode")}},
			after: func(ctx context.Context) {
				t.e.reply(ctx, t.to(), "Plan mode is on. I'll look around (read-only) and propose a plan.")
			}},
	}
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
	if p, ok, err := t.currentPlan(ctx); err == nil && ok {
		steps := make([]stepOut, 0, len(p.Body.Steps))
		for _, s := range p.Body.Steps {
			steps = append(steps, stepOut{s.Text, s.Status})
		}
		out.Plan = map[string]any{"version": p.Version, "title": p.Body.Title, "status": p.Status, "steps": steps}
	}
	b, _ := json.Marshal(out)
	return toolResult{content: string(b)}
}

func (t *turnState) askUserQuestion(args json.RawMessage) toolResult {
	var a struct {
		Question      string   `json:"question"`
		Options       []string `json:"options"`
		AllowFreeText bool     `json:"allow_freetext"`
	}
	if err := strictJSON(args, &a); err != nil {
		return toolError("ask_user_question arguments: %v", err)
	}
	a.Question = strings.TrimSpace(a.Question)
	var opts []string
	for _, o := range a.Options {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}
	if a.Question == "" || len(opts) < 2 || len(opts) > 6 {
		return toolError("ask_user_question needs a question and 2-6 non-empty options (got %d)", len(opts))
	}
	to, ok := t.e.machine.Next(t.sess.Phase, TrigAsk)
	if !ok {
		return toolError("ask_user_question is not available in phase %s; ask in your reply instead", t.sess.Phase)
	}
	next := t.sess
	next.Phase = to
	qid, err := t.e.newID(8)
	if err != nil {
		return toolError("%v", err)
	}
	next.Question = &Question{ID: qid, Text: a.Question, Options: opts, AllowFreeText: a.AllowFreeText, AskedAt: t.e.d.Now()}
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n", a.Question)
	r := Reply{To: t.to(), Kind: ReplyQuestion}
	for i, o := range opts {
		fmt.Fprintf(&b, "%d. %s\n", i+1, o)
		r.Buttons = append(r.Buttons, Button{Label: o, Action: Action{Kind: ActionAnswer, ApprovalID: qid, Value: o}})
	}
	b.WriteString("Answer: /plan answer <number>")
	if a.AllowFreeText {
		b.WriteString(" (or your own words)")
	}
	r.Text = b.String()
	return toolResult{
		content: "Question posted. Stop here; the answer arrives as [QUESTION_ANSWER].",
		endTurn: true,
		change: &stateChange{next: next, ch: Change{Events: []Event{t.event(EventAsked, "agent", nil, a.Question)},
			CancelReminders: true, Nudges: t.e.reminders(next, "", t.e.d.Now())},
			after: func(ctx context.Context) {
				t.e.nudgesChanged(ctx, t.sess.ID)
				if _, err := t.e.send(ctx, r); err != nil {
					t.e.notice(ctx, t.to(), "A question could not be delivered here; /plan status shows it.")
				}
			}},
	}
}

// strictJSON decodes tool arguments, refusing unknown fields.
func strictJSON(data json.RawMessage, v any) error {
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
