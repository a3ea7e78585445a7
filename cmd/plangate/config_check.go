package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
)

// validate checks values the YAML types cannot, and returns every problem at once.
func (c *Config) validate() []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	oneOf := func(key, got string, allowed ...string) {
		if !slices.Contains(allowed, got) {
			bad(key, "%s is %s: expected %s", key, c.quoted(key, got), orList(allowed))
		}
	}
	oneOf("llm.provider", string(c.LLM.Provider), string(ProviderAuto), string(ProviderOpenAI), string(ProviderScript))
	oneOf("log.level", string(c.Log.Level), string(LogDebug), string(LogInfo), string(LogWarn), string(LogError))
	oneOf("log.format", string(c.Log.Format), string(LogText), string(LogJSON))

	for _, p := range []struct{ key, value string }{
		{"store.path", c.Store.Path}, {"plans.dir", c.Plans.Dir}, {"workspace.root", c.Workspace.Root},
	} {
		if p.value == "" {
			bad(p.key, "%s is empty: set it to a path (relative paths start at the config file's directory)", p.key)
		}
	}

	if c.Agent.MaxIterations < 1 {
		bad("agent.max_iterations", "agent.max_iterations is %d: it must be at least 1", c.Agent.MaxIterations)
	}
	if c.Agent.HistoryMessages < 1 {
		bad("agent.history_messages", "agent.history_messages is %d: it must be at least 1", c.Agent.HistoryMessages)
	}
	if c.Agent.HistoryChars < 1000 {
		bad("agent.history_chars", "agent.history_chars is %d: it must be at least 1000", c.Agent.HistoryChars)
	}
	if c.Agent.ToolResultChars < 200 {
		bad("agent.tool_result_chars", "agent.tool_result_chars is %d: it must be at least 200", c.Agent.ToolResultChars)
	}
	if c.LLM.MaxRetries < 0 {
		bad("llm.max_retries", "llm.max_retries is %d: it must be 0 or more", c.LLM.MaxRetries)
	}
	if t := c.LLM.Temperature; t != nil && (*t < 0 || *t > 2) {
		bad("llm.temperature", "llm.temperature is %g: it must be between 0 and 2", *t)
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{
		{"llm.timeout", c.LLM.Timeout},
		{"llm.turn_budget", c.LLM.TurnBudget},
		{"plan_mode.approval_timeout", c.PlanMode.ApprovalTimeout},
		{"plan_mode.nudge_grace", c.PlanMode.NudgeGrace},
	} {
		if d.d < 0 {
			bad(d.key, "%s is %s: it must be 0s or more", d.key, d.d)
		}
	}
	for i, d := range c.PlanMode.Nudges {
		if d < time.Second {
			key := fmt.Sprintf("plan_mode.nudges[%d]", i)
			bad(key, "%s is %s: each nudge must be at least 1s", key, d)
		}
	}
	if c.PlanMode.StartInPlan && !c.PlanMode.Enabled {
		bad("plan_mode.start_in_plan", "plan_mode.start_in_plan is true but plan_mode.enabled is false: enable plan mode or drop start_in_plan")
	}

	for i, a := range c.Access.Approvers {
		if !validApprover(a) {
			key := fmt.Sprintf("access.approvers[%d]", i)
			bad(key, "%s is %s: expected channel:user-id with channel terminal, telegram, slack or discord (or discord-role:role-id)", key, c.quoted(key, a))
		}
	}
	for i, a := range c.Tools.RunCommand.Allow {
		if strings.TrimSpace(a) == "" {
			key := fmt.Sprintf("tools.run_command.allow[%d]", i)
			bad(key, "%s is empty: list program names such as go or git", key)
		}
	}

	if c.LLM.BaseURL != "" && !channels.IsHTTPURL(c.LLM.BaseURL) {
		// The value is not echoed: a URL may carry credentials.
		bad("llm.base_url", "llm.base_url is not an http:// or https:// URL")
	}

	switch p, _ := c.ResolvedProvider(nil); p {
	case ProviderOpenAI:
		if c.LLM.APIKey == "" && c.LLM.BaseURL == "" {
			bad("llm.provider", "llm.provider is openai but llm.api_key and llm.base_url are empty: set %s or llm.base_url", c.source("llm.api_key"))
		}
		if c.LLM.Model == "" {
			bad("llm.model", "llm.model is empty: name the model to use, such as gpt-4.1-mini")
		}
	case ProviderScript:
		if c.LLM.Script == "" {
			bad("llm.script", "llm.script is empty: set it to a script file such as demo/script.yaml")
		}
	}

	for _, s := range c.Channels.sections() {
		ps = append(ps, c.sectionProblems(s)...)
	}
	return ps
}

// sectionProblems turns what a channel's Validate returns into problems under
// channels.<name>, naming the variable to set for a missing secret.
func (c *Config) sectionProblems(s section) []problem {
	prefix := "channels." + s.name
	keyErrs, rest := channels.KeyErrors(s.cfg.Validate())
	var ps []problem
	for _, e := range keyErrs {
		key := prefix + "." + e.Key
		msg := key + " " + e.Msg
		if e.Unset {
			msg += ": set " + c.source(key)
		}
		ps = append(ps, problem{key, msg})
	}
	for _, err := range rest {
		ps = append(ps, problem{prefix, prefix + ": " + err.Error()})
	}
	return ps
}

// source names what the user must set to give key a value: the environment variables its
// ${VAR} references name, else the key itself.
func (c *Config) source(key string) string {
	if vars := c.origins[key]; len(vars) > 0 {
		return strings.Join(vars, " and ")
	}
	return key
}

// quoted shows a value in an error, unless it came from the environment, where a secret
// may have landed by mistake.
func (c *Config) quoted(key, value string) string {
	if vars := c.origins[key]; len(vars) > 0 {
		return "the value of " + strings.Join(vars, " and ")
	}
	return strconv.Quote(value)
}

func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func validApprover(s string) bool {
	channel, id, ok := strings.Cut(s, ":")
	if !ok || id == "" || strings.ContainsAny(id, " \t\r\n") {
		return false
	}
	switch channel {
	case "terminal", "telegram", "slack", "discord", "discord-role":
		return true
	}
	return false
}

// ResolvedProvider says which model provider to start and why, in a phrase for the
// start-up line. auto means openai when an API key or llm.base_url is configured, else the
// script provider. getenv may be nil; it is only used to point out an OPENAI_API_KEY that
// the config does not use.
func (c *Config) ResolvedProvider(getenv func(string) string) (Provider, string) {
	if c.LLM.Provider != ProviderAuto {
		return c.LLM.Provider, "llm.provider is " + string(c.LLM.Provider)
	}
	switch {
	case c.LLM.APIKey != "":
		return ProviderOpenAI, fmt.Sprintf("%s is set: using openai model %s", c.source("llm.api_key"), c.LLM.Model)
	case c.LLM.BaseURL != "":
		return ProviderOpenAI, fmt.Sprintf("llm.base_url is set: using openai model %s", c.LLM.Model)
	}
	script := "the bundled demo script"
	if filepath.Base(c.LLM.Script) != "script.yaml" || filepath.Base(filepath.Dir(c.LLM.Script)) != "demo" {
		script = "the script " + c.LLM.Script
	}
	if getenv != nil && getenv("OPENAI_API_KEY") != "" {
		return ProviderScript, "OPENAI_API_KEY is set but llm.api_key does not use it: using " + script
	}
	return ProviderScript, "no OPENAI_API_KEY or llm.base_url: using " + script
}

// Describe summarises the configuration for `plangate config check`. Secrets are shown
// only as "set" or "not set", and URLs without credentials or query.
func (c *Config) Describe() string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		if label != "" {
			label += ":"
		}
		fmt.Fprintf(&b, "%-11s%s\n", label, fmt.Sprintf(format, args...))
	}
	line("config", "%s", c.file)
	line("store", "%s", c.Store.Path)
	line("plans", "%s", c.Plans.Dir)
	if c.Workspace.Seed != "" {
		line("seed", "%s (copied into a new workspace)", c.Workspace.Seed)
	}
	if c.Workspace.PerSession {
		line("workspace", "%s (a directory per session)", c.Workspace.Root)
	} else {
		line("workspace", "%s (shared by all sessions)", c.Workspace.Root)
	}

	provider, why := c.ResolvedProvider(nil)
	switch provider {
	case ProviderOpenAI:
		model := c.LLM.Model
		if c.LLM.PlanModel != "" {
			model += ", " + c.LLM.PlanModel + " while planning"
		}
		endpoint := "the OpenAI API"
		if c.LLM.BaseURL != "" {
			endpoint = channels.SafeURL(c.LLM.BaseURL)
		}
		line("model", "openai %s at %s, api key %s", model, endpoint, channels.SetOrNot(c.LLM.APIKey))
	default:
		line("model", "%s %s", provider, c.LLM.Script)
	}
	line("", "(%s)", why)

	if c.PlanMode.Enabled {
		nudges := "none"
		if len(c.PlanMode.Nudges) > 0 {
			var ds []string
			for _, d := range c.PlanMode.Nudges {
				ds = append(ds, shortDuration(d))
			}
			nudges = strings.Join(ds, " ")
		}
		timeout := "never"
		if c.PlanMode.ApprovalTimeout > 0 {
			timeout = shortDuration(c.PlanMode.ApprovalTimeout)
		}
		line("plan mode", "on; start in plan %s; auto-approve %s; approval timeout %s; nudges %s",
			onOff(c.PlanMode.StartInPlan), onOff(c.PlanMode.AutoApprove), timeout, nudges)
	} else {
		line("plan mode", "off")
	}

	var chans []string
	for _, s := range c.Channels.sections() {
		if s.enabled {
			chans = append(chans, s.cfg.Describe())
		}
	}
	if len(chans) == 0 {
		chans = append(chans, "none enabled")
	}
	line("channels", "%s", strings.Join(chans, ", "))

	if n := len(c.Access.Approvers); n > 0 {
		line("approvers", "%d", n)
	} else {
		line("approvers", "none listed: the session owner and anyone in a direct message decide")
	}
	if c.Tools.RunCommand.Enabled {
		line("tools", "run_command on for %d programs", len(c.Tools.RunCommand.Allow))
	} else {
		line("tools", "run_command off")
	}
	line("log", "%s, %s", c.Log.Level, c.Log.Format)
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// shortDuration prints 1h instead of 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
