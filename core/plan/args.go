package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The argument decoders below return errors that go back to the model as tool errors, so
// each one says what was wrong and what to send instead.

// proposalArgs is the exit_plan_mode argument object exactly as the model sends it.
type proposalArgs struct {
	Title        string         `json:"title"`
	Summary      string         `json:"summary"`
	Plan         []proposalStep `json:"plan"`
	NonGoals     []string       `json:"non_goals"`
	Expected     string         `json:"expected_outcome"`
	Risk         string         `json:"risk"`
	Assumptions  []string       `json:"assumptions"`
	Risks        []Risk         `json:"risks"`
	Verification []Check        `json:"verification"`
	Scope        Scope          `json:"scope"`
	References   []string       `json:"references"`
	Spec         *ProductSpec   `json:"spec"`
	// AnsweredComments are read by ParseAnswered; the body does not carry them.
	AnsweredComments []string `json:"answered_comments"`
}

type proposalStep struct {
	Step               string   `json:"step"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
}

// Known argument fields per location, with hints for the names models most often confuse.
var (
	proposalFields     = []string{"title", "summary", "plan", "assumptions", "risks", "verification", "scope", "references", "spec", "risk", "non_goals", "expected_outcome", "answered_comments"}
	specFields         = []string{"overview", "features", "user_stories", "tech_stack", "design_direction"}
	featureFields      = []string{"name", "priority", "complexity"}
	proposalStepFields = []string{"step", "acceptance_criteria"}
	riskFields         = []string{"risk", "mitigation"}
	scopeFields        = []string{"allowed_paths", "forbidden_paths", "allowed_tools", "max_files_changed", "max_lines_changed"}
	updateFields       = []string{"plan", "merge", "explanation"}
	updateStepFields   = []string{"step", "status", "acceptance_criteria", "verified_criteria"}
)

func fieldHint(name string) string {
	switch name {
	case "steps", "tasks", "items":
		return "plan"
	case "text", "description", "name", "title", "task":
		return "step"
	case "criteria", "acceptance":
		return "acceptance_criteria"
	case "verified":
		return "verified_criteria"
	case "allowed", "paths", "include":
		return "allowed_paths"
	case "forbidden", "exclude":
		return "forbidden_paths"
	case "nongoals", "non-goals", "out_of_scope":
		return "non_goals"
	case "outcome", "expected", "expected_result":
		return "expected_outcome"
	case "risk_level", "level":
		return "risk"
	}
	return ""
}

// ParseProposal decodes exit_plan_mode arguments into a plan body: steps get ids "1", "2",
// ... and status pending; text is trimmed and empty list entries are dropped. Only the shape
// is checked here; Judge checks the content.
func ParseProposal(args json.RawMessage) (Body, error) {
	const tool = "exit_plan_mode"
	top, err := argObject(tool, args)
	if err != nil {
		return Body{}, err
	}
	problems := unknownFields(tool, "", top, proposalFields)
	problems = append(problems, itemFields(tool, "plan", top["plan"], proposalStepFields)...)
	problems = append(problems, itemFields(tool, "risks", top["risks"], riskFields)...)
	problems = append(problems, itemFields(tool, "verification", top["verification"], checkFields)...)
	if sc, ok := argMap(top["scope"]); ok {
		problems = append(problems, unknownFields(tool, "scope", sc, scopeFields)...)
	}
	if sp, ok := argMap(top["spec"]); ok {
		problems = append(problems, unknownFields(tool, "spec", sp, specFields)...)
		problems = append(problems, itemFields(tool, "spec.features", sp["features"], featureFields)...)
	}
	if len(problems) > 0 {
		return Body{}, Problems(problems)
	}
	var a proposalArgs
	if err := decodeStrict(tool, args, &a); err != nil {
		return Body{}, err
	}
	b := Body{
		Title:   strings.Join(strings.Fields(a.Title), " "),
		Summary: strings.TrimSpace(a.Summary),
		// The level is lower-cased like a feature's priority; the judge checks it.
		Risk:            RiskLevel(strings.ToLower(strings.TrimSpace(a.Risk))),
		NonGoals:        trimList(a.NonGoals),
		ExpectedOutcome: strings.TrimSpace(a.Expected),
		Assumptions:     trimList(a.Assumptions),
		Verification:    trimChecks(a.Verification),
		References:      trimList(a.References),
		Scope: Scope{
			AllowedPaths:    trimList(a.Scope.AllowedPaths),
			ForbiddenPaths:  trimList(a.Scope.ForbiddenPaths),
			AllowedTools:    trimList(a.Scope.AllowedTools),
			MaxFilesChanged: a.Scope.MaxFilesChanged,
			MaxLinesChanged: a.Scope.MaxLinesChanged,
		},
	}
	if sp := a.Spec; sp != nil {
		b.Spec = &ProductSpec{Overview: strings.TrimSpace(sp.Overview), UserStories: trimList(sp.UserStories),
			TechStack: trimList(sp.TechStack), DesignDirection: strings.TrimSpace(sp.DesignDirection)}
		for _, f := range sp.Features {
			b.Spec.Features = append(b.Spec.Features, Feature{Name: strings.TrimSpace(f.Name),
				Priority: strings.ToLower(strings.TrimSpace(f.Priority)), Complexity: strings.ToLower(strings.TrimSpace(f.Complexity))})
		}
	}
	for i, s := range a.Plan {
		b.Steps = append(b.Steps, Step{
			ID:                 strconv.Itoa(i + 1),
			Text:               strings.TrimSpace(s.Step),
			Status:             StepPending,
			AcceptanceCriteria: trimList(s.AcceptanceCriteria),
		})
	}
	for _, r := range a.Risks {
		r.Risk, r.Mitigation = strings.TrimSpace(r.Risk), strings.TrimSpace(r.Mitigation)
		if r.Risk != "" || r.Mitigation != "" {
			b.Risks = append(b.Risks, r)
		}
	}
	return b, nil
}

// StepUpdate is one entry of update_plan's plan list.
type StepUpdate struct {
	Step               string     `json:"step"`
	Status             StepStatus `json:"status"`
	AcceptanceCriteria []string   `json:"acceptance_criteria,omitempty"`
	VerifiedCriteria   []string   `json:"verified_criteria,omitempty"`
}

// UpdateArgs are the update_plan arguments. Merge matches steps by their text and
// leaves the others alone; without it the list replaces the plan's steps.
type UpdateArgs struct {
	Plan        []StepUpdate `json:"plan"`
	Merge       bool         `json:"merge,omitempty"`
	Explanation string       `json:"explanation,omitempty"`
}

// ParseUpdate decodes update_plan arguments: the shape, a non-empty list and valid
// statuses. The plan rules (closure, one step in progress) are ApplyUpdate's.
func ParseUpdate(args json.RawMessage) (UpdateArgs, error) {
	const tool = "update_plan"
	top, err := argObject(tool, args)
	if err != nil {
		return UpdateArgs{}, err
	}
	problems := unknownFields(tool, "", top, updateFields)
	problems = append(problems, itemFields(tool, "plan", top["plan"], updateStepFields)...)
	if len(problems) > 0 {
		return UpdateArgs{}, Problems(problems)
	}
	var u UpdateArgs
	if err := decodeStrict(tool, args, &u); err != nil {
		return UpdateArgs{}, err
	}
	if len(u.Plan) == 0 {
		return UpdateArgs{}, errors.New(`update_plan: "plan" must list at least one step: [{"step": "<text as in the plan>", "status": "in_progress"}]`)
	}
	u.Explanation = strings.TrimSpace(u.Explanation)
	for i := range u.Plan {
		s := &u.Plan[i]
		s.Step = strings.TrimSpace(s.Step)
		s.Status = StepStatus(strings.TrimSpace(string(s.Status)))
		s.AcceptanceCriteria = trimList(s.AcceptanceCriteria)
		s.VerifiedCriteria = trimList(s.VerifiedCriteria)
		switch {
		case s.Status == "":
			problems = append(problems, fmt.Sprintf("update_plan: plan[%d] has no status; use one of %s", i, validStepStatuses))
		case !s.Status.Valid():
			problems = append(problems, fmt.Sprintf("update_plan: plan[%d] has status %q; use one of %s", i, s.Status, validStepStatuses))
		}
	}
	if len(problems) > 0 {
		return UpdateArgs{}, Problems(problems)
	}
	return u, nil
}

const validStepStatuses = `"pending", "in_progress", "completed", "cancelled"`

// ApplyUpdate applies an update_plan call to a copy of steps. Steps are matched by text
// (exactly after trimming, else ignoring case). Criteria only accumulate, so an update
// can never drop the criteria a plan was accepted with to get a step closed. On any rule
// violation it returns every problem and no steps.
func ApplyUpdate(steps []Step, u UpdateArgs) ([]Step, error) {
	if len(u.Plan) == 0 {
		return nil, errors.New(`"plan" must list at least one step`)
	}
	var problems []string
	seen := map[string]int{}
	for i, su := range u.Plan {
		text := strings.TrimSpace(su.Step)
		if text == "" {
			problems = append(problems, fmt.Sprintf("plan[%d] has empty step text; give each step's text as it appears in the plan", i))
			continue
		}
		if !su.Status.Valid() {
			problems = append(problems, fmt.Sprintf("step %q has status %q; use one of %s", text, su.Status, validStepStatuses))
		}
		key := strings.ToLower(text)
		if j, dup := seen[key]; dup {
			problems = append(problems, fmt.Sprintf("plan[%d] and plan[%d] both name step %q; list each step once", j, i, text))
		}
		seen[key] = i
	}
	if len(problems) > 0 {
		return nil, Problems(problems)
	}

	claimed := make([]bool, len(steps))
	next := nextStepID(steps)
	var out []Step
	if u.Merge {
		out = CloneSteps(steps)
	}
	for _, su := range u.Plan {
		text := strings.TrimSpace(su.Step)
		idx := matchStepText(steps, claimed, text)
		var s *Step
		switch {
		case idx < 0:
			out = append(out, Step{ID: strconv.Itoa(next), Text: text})
			next++
			s = &out[len(out)-1]
		case u.Merge:
			claimed[idx] = true
			s = &out[idx]
		default:
			claimed[idx] = true
			out = append(out, CloneSteps(steps[idx:idx+1])...)
			s = &out[len(out)-1]
			s.Text = text
		}
		problems = append(problems, applyStepUpdate(s, su)...)
	}

	var inProgress []string
	for _, s := range out {
		if s.Status == StepInProgress {
			inProgress = append(inProgress, strconv.Quote(s.Text))
		}
		if s.Status != StepCompleted {
			continue
		}
		if missing := unverified(s); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf(
				"step %q cannot be completed yet: acceptance criteria not verified: %s. Check them, then list them in verified_criteria",
				s.Text, quoteList(missing)))
		}
	}
	if len(inProgress) > 1 {
		problems = append(problems, fmt.Sprintf(
			"at most one step may be in_progress, but this update leaves %d: %s; set the others to pending or completed",
			len(inProgress), strings.Join(inProgress, ", ")))
	}
	if len(out) > MaxSteps {
		problems = append(problems, fmt.Sprintf("the plan would have %d steps; at most %d are allowed", len(out), MaxSteps))
	}
	if len(problems) > 0 {
		return nil, Problems(problems)
	}
	return out, nil
}

// applyStepUpdate sets the status and adds criteria; it reports verified criteria that name
// no acceptance criterion of the step.
func applyStepUpdate(s *Step, su StepUpdate) []string {
	s.Status = su.Status
	for _, c := range trimList(su.AcceptanceCriteria) {
		if findCriterion(s.AcceptanceCriteria, c) < 0 {
			s.AcceptanceCriteria = append(s.AcceptanceCriteria, c)
		}
	}
	var problems []string
	verified := make([]bool, len(s.AcceptanceCriteria))
	for _, v := range s.VerifiedCriteria {
		if i := findCriterion(s.AcceptanceCriteria, v); i >= 0 {
			verified[i] = true
		}
	}
	for _, v := range trimList(su.VerifiedCriteria) {
		i := findCriterion(s.AcceptanceCriteria, v)
		switch {
		case i >= 0:
			verified[i] = true
		case len(s.AcceptanceCriteria) == 0:
			problems = append(problems, fmt.Sprintf("step %q has no acceptance criteria, so %q cannot be verified; leave verified_criteria out", s.Text, v))
		default:
			problems = append(problems, fmt.Sprintf("step %q: verified criterion %q is not one of its acceptance criteria (%s); use their exact text",
				s.Text, v, quoteList(s.AcceptanceCriteria)))
		}
	}
	// Stored in acceptance order with the acceptance wording, so the file and the
	// closure check never depend on how the model spelled a criterion.
	s.VerifiedCriteria = nil
	for i, ok := range verified {
		if ok {
			s.VerifiedCriteria = append(s.VerifiedCriteria, s.AcceptanceCriteria[i])
		}
	}
	return problems
}

func unverified(s Step) []string {
	var missing []string
	for _, c := range s.AcceptanceCriteria {
		if findCriterion(s.VerifiedCriteria, c) < 0 {
			missing = append(missing, c)
		}
	}
	return missing
}

// findCriterion matches criteria ignoring case and runs of white space.
func findCriterion(list []string, c string) int {
	key := strings.Join(strings.Fields(c), " ")
	return slices.IndexFunc(list, func(x string) bool {
		return strings.EqualFold(strings.Join(strings.Fields(x), " "), key)
	})
}

// matchStepText finds an unclaimed step with this text: an exact match first, so two steps
// that differ only in case still map to themselves.
func matchStepText(steps []Step, claimed []bool, text string) int {
	for i, s := range steps {
		if !claimed[i] && strings.TrimSpace(s.Text) == text {
			return i
		}
	}
	for i, s := range steps {
		if !claimed[i] && strings.EqualFold(strings.TrimSpace(s.Text), text) {
			return i
		}
	}
	return -1
}

// nextStepID is one more than the largest numeric id, so an id that was dropped by a
// replacing update is never given to a different step.
func nextStepID(steps []Step) int {
	n := len(steps)
	for _, s := range steps {
		if v, err := strconv.Atoi(s.ID); err == nil && v > n {
			n = v
		}
	}
	return n + 1
}

// CloneSteps copies steps with their criteria lists, so a change to the copy leaves steps alone.
func CloneSteps(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, s := range steps {
		s.AcceptanceCriteria = slices.Clone(s.AcceptanceCriteria)
		s.VerifiedCriteria = slices.Clone(s.VerifiedCriteria)
		out[i] = s
	}
	return out
}

// AllDone reports whether the plan has steps and every one is completed or cancelled.
func AllDone(steps []Step) bool {
	if len(steps) == 0 {
		return false
	}
	for _, s := range steps {
		if s.Status != StepCompleted && s.Status != StepCancelled {
			return false
		}
	}
	return true
}

// hashedStep and hashedBody are the canonical form Hash hashes: the proposed content,
// without ids, statuses or verified criteria, nil and empty lists alike.
type hashedStep struct {
	Text     string   `json:"text"`
	Criteria []string `json:"acceptance_criteria,omitempty"`
}

type hashedBody struct {
	Title        string       `json:"title"`
	Summary      string       `json:"summary,omitempty"`
	Steps        []hashedStep `json:"steps,omitempty"`
	Assumptions  []string     `json:"assumptions,omitempty"`
	Risks        []Risk       `json:"risks,omitempty"`
	Verification []Check      `json:"verification,omitempty"`
	// Absent when unset, so the hashes of plans without them are unchanged.
	Risk       RiskLevel `json:"risk,omitempty"`
	NonGoals   []string  `json:"non_goals,omitempty"`
	Expected   string    `json:"expected_outcome,omitempty"`
	Allowed    []string  `json:"allowed_paths,omitempty"`
	Forbidden  []string  `json:"forbidden_paths,omitempty"`
	Tools      []string  `json:"allowed_tools,omitempty"`
	MaxFiles   int       `json:"max_files_changed,omitempty"`
	MaxLines   int       `json:"max_lines_changed,omitempty"`
	References []string  `json:"references,omitempty"`
}

// Hash is the content hash of a plan body (sha256, hex); it recognises an identical
// re-proposal.
func Hash(b Body) string {
	h := hashedBody{
		Title: b.Title, Summary: b.Summary, Assumptions: b.Assumptions, Risks: b.Risks,
		Verification: b.Verification, Allowed: b.Scope.AllowedPaths,
		Forbidden: b.Scope.ForbiddenPaths, Tools: b.Scope.AllowedTools, References: b.References,
		MaxFiles: b.Scope.MaxFilesChanged, MaxLines: b.Scope.MaxLinesChanged,
		Risk: b.Risk, NonGoals: b.NonGoals, Expected: b.ExpectedOutcome,
	}
	for _, s := range b.Steps {
		h.Steps = append(h.Steps, hashedStep{Text: s.Text, Criteria: s.AcceptanceCriteria})
	}
	data, err := json.Marshal(h)
	if err != nil {
		// Only strings and slices of strings: marshalling cannot fail.
		panic(fmt.Sprintf("hashing plan: %v", err))
	}
	sum := sha256.Sum256(append([]byte("plangate plan v1\n"), data...))
	return hex.EncodeToString(sum[:])
}
