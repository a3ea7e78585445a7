package main

import (
	"reflect"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

func TestConfigPolicies(t *testing.T) {
	body := `access:
  approvers: ["slack:U1"]
  policies:
    - match: {channel: slack, chat: C0PROD}
      approvers: ["slack:U1", "slack:U2", "slack:U3"]
      required: 2
      requester_may_approve: false
    - match: {channel: telegram}
plan_mode:
  auto_approve_rules:
    - {name: docs-only, paths: ["docs/**", "*.md"], max_steps: 6}
  planner: {style: ambitious, expand_short_goals: true}
`
	cfg, err := LoadConfig(writeConfig(t, body), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []machine.Policy{
		{Match: machine.PolicyMatch{Channel: "slack", Chat: "C0PROD"}, Approvers: []string{"slack:U1", "slack:U2", "slack:U3"}, Required: 2},
		{Match: machine.PolicyMatch{Channel: "telegram"}, Required: 1, RequesterMayApprove: true},
	}
	if got := cfg.Access.CorePolicies(); !reflect.DeepEqual(got, want) {
		t.Errorf("CorePolicies =\n%+v\nwant\n%+v", got, want)
	}
	rules := []machine.ApproveRule{{Name: "docs-only", Paths: []string{"docs/**", "*.md"}, MaxSteps: 6}}
	if got := cfg.PlanMode.CoreRules(); !reflect.DeepEqual(got, rules) {
		t.Errorf("CoreRules = %+v, want %+v", got, rules)
	}
	if ec := engineConfig(cfg); !reflect.DeepEqual(ec.Policies, want) || !reflect.DeepEqual(ec.AutoApproveRules, rules) {
		t.Errorf("engine config: policies %+v, rules %+v; want what the config says", ec.Policies, ec.AutoApproveRules)
	}
	if got := cfg.PlanMode.Planner.CorePlanner(); got != (engine.Planner{Style: engine.StyleAmbitious, ExpandShortGoals: true}) {
		t.Errorf("CorePlanner = %+v", got)
	}
}

func TestConfigPolicyErrors(t *testing.T) {
	body := `access:
  approvers: ["slack:U1"]
  policies:
    - match: {channel: slack}
      approvers: ["slack:U1", "slack:U2"]
      required: 3
    - match: {channel: irc}
      required: 2
    - approvers: ["nobody"]
plan_mode:
  auto_approve_rules:
    - {name: docs, paths: ["docs/**"]}
    - name: docs
      paths: ["/etc/**"]
      max_steps: -1
  planner: {style: bold}
`
	got := loadProblems(t, body, nil)
	want := []string{
		`FILE:6: access.policies[0].required is 3 but approvers lists only 2 people: the policy can never be satisfied; list more approvers or lower required`,
		`FILE:7: access.policies[1].match.channel is "irc": expected terminal, telegram, slack, discord or web`,
		`FILE:8: access.policies[1].required is 2 but access.approvers lists only 1 person: the policy can never be satisfied; list more approvers or lower required`,
		`FILE:9: access.policies[2].approvers[0] is "nobody": expected channel:user-id with channel terminal, telegram, slack or discord (or discord-role:role-id)`,
		`FILE:13: plan_mode.auto_approve_rules[1].name is "docs", the name of an earlier rule: give every rule its own name`,
		`FILE:14: plan_mode.auto_approve_rules[1].paths[0] "/etc/**" is absolute; use a path relative to the workspace, like "docs/**"`,
		`FILE:15: plan_mode.auto_approve_rules[1].max_steps is -1: it must be 0 (no limit) or more`,
		`FILE:16: plan_mode.planner.style is "bold": expected conservative or ambitious`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", join(got), join(want))
	}
}

func join(lines []string) string {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}

func TestConfigRiskPolicies(t *testing.T) {
	body := `access:
  approvers: ["slack:U1", "slack:U2"]
  policies:
    - match: {risk: high}
      required: 2
    - match: {channel: slack, risk: medium}
      requester_may_approve: false
`
	cfg, err := LoadConfig(writeConfig(t, body), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []machine.Policy{
		{Match: machine.PolicyMatch{Risk: plan.RiskHigh}, Required: 2, RequesterMayApprove: true},
		{Match: machine.PolicyMatch{Channel: "slack", Risk: plan.RiskMedium}, Required: 1},
	}
	if got := cfg.Access.CorePolicies(); !reflect.DeepEqual(got, want) {
		t.Errorf("CorePolicies =\n%+v\nwant\n%+v", got, want)
	}

	bad := `access:
  approvers: ["slack:U1", "slack:U2"]
  policies:
    - match: {channel: slack, chat: C0PROD}
      approvers: ["slack:U1", "slack:U2", "slack:U3"]
    - match: {risk: severe}
      required: 2
    - match: {risk: high}
      approvers: ["slack:U9"]
    - match: {channel: slack, chat: C0PROD, risk: high}
      required: 4
    - match: {risk: high}
      required: 3
`
	got := loadProblems(t, bad, nil)
	wantErrs := []string{
		`FILE:6: access.policies[1].match.risk is "severe": expected low, medium or high`,
		`FILE:9: access.policies[2].approvers is set on a risk rule (match.risk): a risk rule only makes the policy of the session stricter (required, requester_may_approve) and keeps its approvers; list approvers on an entry without risk`,
		`FILE:11: access.policies[3].required is 4 but approvers lists only 3 people: the policy can never be satisfied; list more approvers or lower required`,
		`FILE:13: access.policies[4].required is 3 but access.approvers lists only 2 people: the policy can never be satisfied; list more approvers or lower required`,
	}
	if !reflect.DeepEqual(got, wantErrs) {
		t.Errorf("problems:\n%s\nwant\n%s", join(got), join(wantErrs))
	}
}

func TestConfigBoundary(t *testing.T) {
	body := `tools:
  run_command: {enabled: true, allow: [go]}
plan_mode:
  boundary:
    forbidden_paths: ["deploy/**", ".github/**"]
    forbidden_tools: [gh__delete_repo]
    max_files_changed: 20
    max_lines_changed: 2000
    require_verification: true
`
	cfg, err := LoadConfig(writeConfig(t, body), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Boundary{ForbiddenPaths: []string{"deploy/**", ".github/**"}, ForbiddenTools: []string{"gh__delete_repo"},
		MaxFilesChanged: 20, MaxLinesChanged: 2000, RequireVerification: true}
	if got := engineConfig(cfg).Boundary; !reflect.DeepEqual(got, want) {
		t.Errorf("engine boundary %+v, want %+v", got, want)
	}
}

func TestConfigBoundaryErrors(t *testing.T) {
	body := `plan_mode:
  boundary:
    forbidden_paths: ["/etc/**", "ok/**"]
    forbidden_tools: [run_command]
    max_files_changed: -1
    require_verification: true
`
	if got := loadProblems(t, "plan_mode:\n  boundary:\n    max_hours: 2\n", nil); len(got) != 1 ||
		got[0] != `FILE:3: unknown key "max_hours" in plan_mode.boundary (valid keys: forbidden_paths, forbidden_tools, max_files_changed, max_lines_changed, require_verification)` {
		t.Errorf("an unknown boundary key: %q", got)
	}
	got := loadProblems(t, body, nil)
	want := []string{
		`FILE:3: plan_mode.boundary.forbidden_paths[0] "/etc/**" is absolute; use a path relative to the workspace, like "docs/**"`,
		`FILE:4: plan_mode.boundary.forbidden_tools[0] "run_command" is not an MCP tool's name (<server>__<tool>); to keep plans from running commands set tools.run_command.enabled: false, and to hide a tool from the agent altogether use its server's deny_tools`,
		`FILE:5: plan_mode.boundary.max_files_changed is -1; give a number from 1 to 10000, or leave it out for no limit`,
		`FILE:6: plan_mode.boundary.require_verification is true but tools.run_command.enabled is false: plangate runs a plan's checks as commands, so no plan could be proposed; enable run_command (with its allow list) or drop require_verification`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", join(got), join(want))
	}
}

func TestConfigEscalateTo(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "plan_mode:\n  escalate_to: [\"slack:T1:C0OPS\", \"telegram:4242:-1001234:77\"]\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Address{{Channel: "slack", Account: "T1", Chat: "C0OPS"}, {Channel: "telegram", Account: "4242", Chat: "-1001234", Thread: "77"}}
	if got := engineConfig(cfg).EscalateTo; !reflect.DeepEqual(got, want) {
		t.Errorf("EscalateTo = %+v, want %+v", got, want)
	}
	got := loadProblems(t, "plan_mode:\n  escalate_to: [\"slack:C0OPS\", \"irc:x:y\"]\n", nil)
	wantP := []string{
		`FILE:2: plan_mode.escalate_to[0] is "slack:C0OPS": want channel:account:chat as plangate names sessions, such as slack:T0123:C0OPS or telegram:4242:-1001234 (plangate sessions list shows them)`,
		`FILE:2: plan_mode.escalate_to[1] is "irc:x:y": the channel "irc" is not one of terminal, telegram, slack, discord or web`,
	}
	if !reflect.DeepEqual(got, wantP) {
		t.Errorf("problems:\n%s\nwant\n%s", join(got), join(wantP))
	}
}

// "approvers" in escalate_to is each approver of access.approvers that plangate can
// message directly (Telegram, Slack), listed once; with none of those it is refused.
func TestConfigEscalateToApprovers(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "access:\n  approvers: [\"telegram:42\", \"slack:U7\", \"web:alice\", \"discord:9\"]\n"+
		"plan_mode:\n  escalate_to: [approvers, \"slack:T1:C0OPS\", approvers]\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Address{{Channel: "telegram", Chat: "42"}, {Channel: "slack", Chat: "U7"}, {Channel: "slack", Account: "T1", Chat: "C0OPS"}}
	if got := engineConfig(cfg).EscalateTo; !reflect.DeepEqual(got, want) {
		t.Errorf("EscalateTo = %+v, want %+v", got, want)
	}
	got := loadProblems(t, "access:\n  approvers: [\"web:alice\"]\nplan_mode:\n  escalate_to: [approvers]\n", nil)
	wantP := []string{`FILE:4: plan_mode.escalate_to names approvers, but access.approvers lists nobody plangate can message directly (on telegram or slack): add such approvers, or name the chats to tell (channel:account:chat)`}
	if !reflect.DeepEqual(got, wantP) {
		t.Errorf("problems:\n%s\nwant\n%s", join(got), join(wantP))
	}
}
