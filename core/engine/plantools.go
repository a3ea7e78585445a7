package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Names of the plan tools the core handles itself.
const (
	ToolEnterPlanMode   = "enter_plan_mode"
	ToolExitPlanMode    = "exit_plan_mode"
	ToolUpdatePlan      = "update_plan"
	ToolAskUserQuestion = "ask_user_question"
	ToolPlanStatus      = "plan_status"
)

// planToolSpecs are the plan tools as the model sees them (docs/design.md §6), built
// once and shared by every model call (nothing writes them; the model's encoder keeps
// copies of what it encoded).
var planToolSpecs = sync.OnceValue(func() []core.ToolSpec {
	str := `{"type":"string"}`
	strs := `{"type":"array","items":{"type":"string"}}`
	return []core.ToolSpec{
		{Name: ToolEnterPlanMode, Kind: core.ToolPlan,
			Description: "Enter plan mode before changing anything: investigate read-only, then propose a plan with exit_plan_mode.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"reason":` + str + `},"additionalProperties":false}`)},
		{Name: ToolExitPlanMode, Kind: core.ToolPlan,
			Description: "Propose the plan to the user for approval. Your turn ends; wait for [PLAN_DECISION].",
			Parameters: json.RawMessage(`{"type":"object","required":["title","plan"],"additionalProperties":false,"properties":{` +
				`"title":{"type":"string","maxLength":80},"summary":` + str + `,` +
				`"plan":{"type":"array","minItems":1,"items":{"type":"object","required":["step"],"additionalProperties":false,"properties":{"step":` + str + `,"acceptance_criteria":` + strs + `}}},` +
				`"assumptions":` + strs + `,` +
				`"risks":{"type":"array","items":{"type":"object","required":["risk","mitigation"],"properties":{"risk":` + str + `,"mitigation":` + str + `}}},` +
				`"verification":{"type":"array","description":"checks of the finished work: a string is a check in words; {argv, name?} is a command plangate runs in the command sandbox before it calls the plan done (a program and its arguments, no shell; it must pass)",` +
				`"items":{"anyOf":[` + str + `,{"type":"object","required":["argv"],"additionalProperties":false,"properties":{"argv":{"type":"array","minItems":1,"items":` + str + `},"name":` + str + `}}]}},` +
				`"scope":{"type":"object","additionalProperties":false,"properties":{"allowed_paths":` + strs + `,"forbidden_paths":` + strs + `,"allowed_tools":` + strs +
				`,"max_files_changed":{"type":"integer","minimum":0,"maximum":10000,"description":"budget: how many files the execution may change in all (0 or absent: no limit)"}` +
				`,"max_lines_changed":{"type":"integer","minimum":0,"maximum":1000000,"description":"budget: how many lines (added plus removed) the execution may change in all (0 or absent: no limit)"}}},` +
				`"references":` + strs + `,` +
				`"risk":{"type":"string","enum":["low","medium","high"],"description":"the whole plan's risk; an approval policy may need more approvals for high (left out counts as high)"},` +
				`"non_goals":` + strs + `,"expected_outcome":` + str + `,` +
				`"answered_comments":{"type":"array","items":` + str + `,"description":"ids of the comments on steps sent with [PLAN_DECISION] (c1, c2, ...) that this version answers"},` +
				`"spec":{"type":"object","additionalProperties":false,"properties":{"overview":` + str + `,` +
				`"features":{"type":"array","items":{"type":"object","required":["name","priority","complexity"],"additionalProperties":false,"properties":{"name":` + str +
				`,"priority":{"type":"string","enum":["high","medium","low"]},"complexity":{"type":"string","enum":["small","medium","large"]}}}},` +
				`"user_stories":` + strs + `,"tech_stack":` + strs + `,"design_direction":` + str + `}}}}`)},
		{Name: ToolUpdatePlan, Kind: core.ToolPlan,
			Description: "Report step progress while executing an accepted plan: the status and verified criteria of its steps only (adding, removing or rewording steps is a new plan, which needs the user). A step may be completed only when every acceptance criterion is listed in verified_criteria; at most one step in_progress. When you cancel a step, say why in explanation.",
			Parameters: json.RawMessage(`{"type":"object","required":["plan"],"additionalProperties":false,"properties":{` +
				`"plan":{"type":"array","items":{"type":"object","required":["step","status"],"additionalProperties":false,"properties":{"step":` + str + `,` +
				`"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]},"acceptance_criteria":` + strs + `,"verified_criteria":` + strs + `}}},` +
				`"merge":{"type":"boolean"},"explanation":` + str + `}}`)},
		{Name: ToolAskUserQuestion, Kind: core.ToolPlan,
			Description: "Ask the user a question with 2-6 options. Your turn ends; the answer arrives as [QUESTION_ANSWER].",
			Parameters: json.RawMessage(`{"type":"object","required":["question","options"],"additionalProperties":false,"properties":{` +
				`"question":` + str + `,"options":{"type":"array","minItems":2,"maxItems":6,"items":{"type":"string"}},"allow_freetext":{"type":"boolean"}}}`)},
		{Name: ToolPlanStatus, Kind: core.ToolPlan,
			Description: "Show the session's phase, the current plan and its steps.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
	}
})

// toolSpecs are the tools offered to the model: the plan tools, then the workspace's.
func (e *Engine) toolSpecs() []core.ToolSpec {
	specs := slices.Clip(planToolSpecs()) // appended to: a copy, never the shared list
	if e.d.Tools != nil {
		specs = append(specs, e.d.Tools.Tools()...)
	}
	return specs
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
		return fmt.Sprintf("%s on %s", name, machine.OneLine(a.Path))
	case len(a.Argv) > 0:
		return fmt.Sprintf("%s %s", name, machine.OneLine(strings.Join(a.Argv, " ")))
	}
	return name
}

func (t *jobRun) planStatus(ctx context.Context) toolResult {
	type stepOut struct {
		Step   string          `json:"step"`
		Status plan.StepStatus `json:"status"`
	}
	out := struct {
		Phase       core.Phase     `json:"phase"`
		AutoApprove bool           `json:"auto_approve"`
		Plan        any            `json:"plan"`
		Question    *core.Question `json:"pending_question"`
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
