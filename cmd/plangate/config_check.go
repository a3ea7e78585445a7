package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/core/tools"
)

// maxWriteBytesLimit bounds tools.max_write_bytes: a tool call carries the whole file.
const maxWriteBytesLimit = 64 << 20

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
	if tg := c.Channels.Telegram; tg.PollTimeout < time.Second || tg.PollTimeout > 5*time.Minute {
		bad("channels.telegram.poll_timeout", "channels.telegram.poll_timeout is %s: it must be between 1s and 5m", tg.PollTimeout)
	}
	if c.Channels.Discord.LongReplyAsFile < 0 {
		bad("channels.discord.long_reply_as_file", "channels.discord.long_reply_as_file is %d: use 0 (never) or a character count", c.Channels.Discord.LongReplyAsFile)
	}
	if c.Channels.Slack.LongReplyAsFile < 0 {
		bad("channels.slack.long_reply_as_file", "channels.slack.long_reply_as_file is %d: use 0 (never) or a character count", c.Channels.Slack.LongReplyAsFile)
	}
	if c.Channels.Telegram.LongReplyAsFile < 0 {
		bad("channels.telegram.long_reply_as_file", "channels.telegram.long_reply_as_file is %d: use 0 (never) or a character count", c.Channels.Telegram.LongReplyAsFile)
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
	for _, p := range []struct{ key, value string }{{"store.path", c.Store.Path}, {"plans.dir", c.Plans.Dir}} {
		if p.value != "" && c.Workspace.Root != "" && pathWithin(p.value, c.Workspace.Root) {
			bad(p.key, "%s is inside workspace.root: the agent's tools and commands would reach plangate's own files; move it out of the workspace", p.key)
		}
	}
	oneOf("tools.run_command.sandbox", c.Tools.RunCommand.Sandbox, "bwrap", "none")
	if n := c.Tools.MaxWriteBytes; n < 1 || n > maxWriteBytesLimit {
		bad("tools.max_write_bytes", "tools.max_write_bytes is %d: it must be between 1 and %d (64 MiB)", n, maxWriteBytesLimit)
	}
	for i, a := range c.Tools.RunCommand.Allow {
		if strings.TrimSpace(a) == "" {
			key := fmt.Sprintf("tools.run_command.allow[%d]", i)
			bad(key, "%s is empty: list program names such as go or git", key)
		}
	}

	for _, u := range []struct{ key, value string }{
		{"llm.base_url", c.LLM.BaseURL},
		{"channels.telegram.api_url", c.Channels.Telegram.APIURL},
		{"channels.slack.api_url", c.Channels.Slack.APIURL},
		{"channels.discord.api_url", c.Channels.Discord.APIURL},
	} {
		if u.value != "" && !isHTTPURL(u.value) {
			// The value is not echoed: a URL may carry credentials.
			bad(u.key, "%s is not an http:// or https:// URL", u.key)
		}
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

	ch := c.Channels
	for _, s := range []struct {
		enabled    bool
		key, value string
	}{
		{ch.Telegram.Enabled, "channels.telegram.token", ch.Telegram.Token},
		{ch.Slack.Enabled, "channels.slack.bot_token", ch.Slack.BotToken},
		{ch.Slack.Enabled, "channels.slack.app_token", ch.Slack.AppToken},
		{ch.Discord.Enabled, "channels.discord.token", ch.Discord.Token},
	} {
		if s.enabled && s.value == "" {
			bad(s.key, "%s is empty: set %s", s.key, c.source(s.key))
		}
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

func isHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
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
			endpoint = safeURL(c.LLM.BaseURL)
		}
		line("model", "openai %s at %s, api key %s", model, endpoint, setOrNot(c.LLM.APIKey))
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
	ch := c.Channels
	if ch.Terminal.Enabled {
		chans = append(chans, "terminal")
	}
	if ch.Telegram.Enabled {
		chans = append(chans, "telegram (token "+setOrNot(ch.Telegram.Token)+apiNote(ch.Telegram.APIURL)+")")
	}
	if ch.Slack.Enabled {
		chans = append(chans, "slack (bot token "+setOrNot(ch.Slack.BotToken)+", app token "+setOrNot(ch.Slack.AppToken)+apiNote(ch.Slack.APIURL)+")")
	}
	if ch.Discord.Enabled {
		chans = append(chans, "discord (token "+setOrNot(ch.Discord.Token)+apiNote(ch.Discord.APIURL)+")")
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
	line("tools", "%s; writes up to %d bytes", runCommandSummary(c.Tools.RunCommand), c.Tools.MaxWriteBytes)
	line("log", "%s, %s", c.Log.Level, c.Log.Format)
	return b.String()
}

func setOrNot(secret string) string {
	if secret == "" {
		return "not set"
	}
	return "set"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func apiNote(apiURL string) string {
	if apiURL == "" {
		return ""
	}
	return ", api " + safeURL(apiURL)
}

// safeURL keeps scheme, host and path: user info and query strings may hold credentials.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
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

// runCommandSummary says whether run_command runs, and how confined.
func runCommandSummary(rc RunCommandConfig) string {
	switch {
	case !rc.Enabled:
		return "run_command off"
	case rc.Sandbox == "none":
		return fmt.Sprintf("run_command on for %d programs WITHOUT a sandbox (tools.run_command.sandbox: none)", len(rc.Allow))
	}
	if err := tools.CheckSandbox("", rc.Network); err != nil {
		return fmt.Sprintf("run_command unavailable: %v", err)
	}
	net := "no network"
	if rc.Network {
		net = "with network"
	}
	return fmt.Sprintf("run_command on for %d programs in the bwrap sandbox, %s", len(rc.Allow), net)
}

// pathWithin reports whether p is root or lies under it, lexically and, where the paths
// exist, after resolving symlinks.
func pathWithin(p, root string) bool {
	under := func(p, root string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && filepath.IsLocal(rel)
	}
	if under(p, root) {
		return true
	}
	rp, err1 := filepath.EvalSymlinks(p)
	rr, err2 := filepath.EvalSymlinks(root)
	if err1 != nil {
		// A file not created yet: resolve its directory.
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			rp, err1 = filepath.Join(d, filepath.Base(p)), nil
		}
	}
	return err1 == nil && err2 == nil && under(rp, rr)
}
