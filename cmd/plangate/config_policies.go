package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/conf"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The approval policies, auto-approve rules and planner style of docs/design.md §12 and §13:
// their config types, checks and the core values they become.

// ApprovalPolicyConfig is one access.policies entry.
type ApprovalPolicyConfig struct {
	Match PolicyMatchConfig `yaml:"match"`
	// Approvers replace access.approvers where the policy applies; empty keeps them.
	Approvers []string `yaml:"approvers"`
	Required  int      `yaml:"required"` // distinct approvers needed; 0 = 1
	// RequesterMayApprove: nil (omitted) = true.
	RequesterMayApprove *bool `yaml:"requester_may_approve"`
}

// PolicyMatchConfig selects sessions; an omitted field matches all. With Risk the entry is
// a risk rule (machine.PolicyFor says how it combines).
type PolicyMatchConfig struct {
	Channel string `yaml:"channel"`
	Account string `yaml:"account"`
	Chat    string `yaml:"chat"`
	Risk    string `yaml:"risk"` // low, medium or high
}

// AutoApproveRuleConfig is one plan_mode.auto_approve_rules entry.
type AutoApproveRuleConfig struct {
	Name            string   `yaml:"name"`
	Paths           []string `yaml:"paths"`
	MaxSteps        int      `yaml:"max_steps"` // 0 = no limit
	AllowRunCommand bool     `yaml:"allow_run_command"`
	AllowTools      []string `yaml:"allow_tools"`
}

// PlannerConfig is plan_mode.planner.
type PlannerConfig struct {
	Style            string `yaml:"style"` // conservative or ambitious
	ExpandShortGoals bool   `yaml:"expand_short_goals"`
}

// escalationAddress reads one plan_mode.escalate_to entry: channel:account:chat, with a
// thread after a fourth colon, as plangate names a session.
func escalationAddress(s string) (core.Address, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) < 3 || slices.Contains(parts, "") {
		return core.Address{}, errors.New("want channel:account:chat as plangate names sessions, such as slack:T0123:C0OPS or telegram:4242:-1001234 (plangate sessions list shows them)")
	}
	if !slices.Contains(channelNames(nil), parts[0]) {
		return core.Address{}, fmt.Errorf("the channel %q is not one of %s", parts[0], conf.OrList(channelNames(nil)))
	}
	a := core.Address{Channel: parts[0], Account: parts[1], Chat: parts[2]}
	if len(parts) == 4 {
		a.Thread = parts[3]
	}
	return a, nil
}

// escalateApprovers is the plan_mode.escalate_to entry that names every approver of
// access.approvers, each told in a direct message.
const escalateApprovers = "approvers"

// directMessaged are the channels whose approvers an escalation reaches in a direct
// message: a Telegram user's private chat with the bot has the user's id, and Slack
// posts to a user id in the app's direct messages. A Discord DM needs a channel made for
// it, and the web has none.
var directMessaged = []string{"telegram", "slack"}

// approverDM is the address of approver entry "channel:user id" in a direct message, if
// its channel has them.
func approverDM(entry string) (core.Address, bool) {
	ch, user, ok := strings.Cut(entry, ":")
	if !ok || user == "" || !slices.Contains(directMessaged, ch) {
		return core.Address{}, false
	}
	return core.Address{Channel: ch, Chat: user}, true
}

// coreEscalateTo is plan_mode.escalate_to as core takes it, "approvers" spelled out as the
// direct messages of access.approvers; validate refused bad entries.
func (c *Config) coreEscalateTo() []core.Address {
	var out []core.Address
	for _, s := range c.PlanMode.EscalateTo {
		if s == escalateApprovers {
			for _, ap := range c.Access.Approvers {
				if a, ok := approverDM(ap); ok && !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
			continue
		}
		if a, err := escalationAddress(s); err == nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// decideURL is where a person decides on the web: http.public_url while the web channel
// is on, else "".
func (c *Config) decideURL() string {
	if !c.Channels.Web.Enabled {
		return ""
	}
	return c.HTTP.PublicURL
}

// CorePlanner is the planner setting as core takes it.
func (p PlannerConfig) CorePlanner() engine.Planner {
	return engine.Planner{Style: engine.PlannerStyle(p.Style), ExpandShortGoals: p.ExpandShortGoals}
}

// CorePolicies turns access.policies into core's policies, defaults filled in.
func (a AccessConfig) CorePolicies() []machine.Policy {
	out := make([]machine.Policy, 0, len(a.Policies))
	for _, p := range a.Policies {
		cp := machine.Policy{
			Match:               machine.PolicyMatch{Channel: p.Match.Channel, Account: p.Match.Account, Chat: p.Match.Chat, Risk: plan.RiskLevel(p.Match.Risk)},
			Required:            max(p.Required, 1),
			RequesterMayApprove: p.RequesterMayApprove == nil || *p.RequesterMayApprove,
		}
		if len(p.Approvers) > 0 {
			cp.Approvers = p.Approvers
		}
		out = append(out, cp)
	}
	return out
}

// CoreRules turns plan_mode.auto_approve_rules into core's rules.
func (p PlanModeConfig) CoreRules() []machine.ApproveRule {
	out := make([]machine.ApproveRule, 0, len(p.AutoApproveRules))
	for _, r := range p.AutoApproveRules {
		out = append(out, machine.ApproveRule{Name: r.Name, Paths: r.Paths, MaxSteps: r.MaxSteps, AllowRunCommand: r.AllowRunCommand, AllowTools: r.AllowTools})
	}
	return out
}

// policyProblems checks access.policies: approvers as access.approvers, a known channel,
// a risk level, no approvers on a risk rule, and a required count the approvers can meet
// (for a risk rule, those of the policy it makes stricter where its match fits).
func (a AccessConfig) policyProblems() []error {
	var errs []error
	policies := a.CorePolicies()
	for i, p := range a.Policies {
		key := fmt.Sprintf("policies[%d]", i)
		for j, s := range p.Approvers {
			if !validApprover(s) {
				errs = append(errs, conf.BadValue(fmt.Sprintf("%s.approvers[%d]", key, j), s,
					"%s", approverHint(func(r channelRow) bool { return r.userIDs })))
			}
		}
		if c := p.Match.Channel; c != "" {
			errs = append(errs, conf.OneOf(key+".match.channel", c, channelNames(nil)...))
		}
		checked := policies[i]
		if r := p.Match.Risk; r != "" {
			errs = append(errs, conf.OneOf(key+".match.risk", r, "low", "medium", "high"))
			if len(p.Approvers) > 0 {
				errs = append(errs, conf.Invalid(key+".approvers", "is set on a risk rule (match.risk): a risk rule only makes the policy of the session stricter (required, requester_may_approve) and keeps its approvers; list approvers on an entry without risk"))
			}
			// This rule alone on the session policy it tightens where its match fits.
			m := p.Match
			addr := core.Address{Channel: m.Channel, Account: m.Account, Chat: m.Chat}
			base := machine.PolicyFor(policies, addr, "")
			base.Match = machine.PolicyMatch{}
			checked = machine.PolicyFor([]machine.Policy{base, policies[i]}, addr, plan.RiskLevel(r))
		}
		if p.Required < 0 {
			errs = append(errs, conf.Invalid(key+".required", "is %d: it must be 1 or more (0 or omitted means 1)", p.Required))
		} else if problem := machine.PolicyProblem(checked, a.Approvers); problem != "" {
			errs = append(errs, conf.Invalid(key+".required", "%s", strings.TrimPrefix(problem, "required ")))
		}
	}
	return errs
}

// ruleProblems checks plan_mode.auto_approve_rules.
func (p PlanModeConfig) ruleProblems() error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range p.CoreRules() {
		key := fmt.Sprintf("auto_approve_rules[%d]", i)
		for _, problem := range r.Problems() {
			field, msg, _ := strings.Cut(problem, " ") // "paths[1] ..." names its entry
			errs = append(errs, conf.Invalid(key+"."+field, "%s", msg))
		}
		if r.Name != "" && seen[r.Name] {
			errs = append(errs, conf.Invalid(key+".name", "is %q, the name of an earlier rule: give every rule its own name", r.Name))
		}
		seen[r.Name] = true
	}
	return errors.Join(errs...)
}
