package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/tools"
	"github.com/plangate/plangate/store"
)

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
	line("store", "%s", c.describeStore())
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
	line("model", "%s", c.LLM.describe(provider))
	line("", "(%s)", why)
	line("plan mode", "%s", c.PlanMode.Describe())

	var chans []string // each adapter summarises its own section, without secrets
	for _, r := range enabledRows(&c.Channels) {
		chans = append(chans, r.section(&c.Channels).Describe())
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
	line("talk", "%s", c.Access.describeTalk())
	line("tools", "%s; writes up to %d bytes", runCommandSummary(c.Tools.RunCommand), c.Tools.MaxWriteBytes)
	line("http", "%s", c.HTTP.describe())
	line("log", "%s, %s", c.Log.Level, c.Log.Format)
	return b.String()
}

// describe names the model that runs and where; the API key only as set or not.
func (l LLMConfig) describe(provider Provider) string {
	if provider != ProviderOpenAI {
		return fmt.Sprintf("%s %s", provider, l.Script)
	}
	model := l.Model
	if l.PlanModel != "" {
		model += ", " + l.PlanModel + " while planning"
	}
	endpoint := "the OpenAI API"
	if l.BaseURL != "" {
		endpoint = channels.SafeURL(l.BaseURL)
	}
	return fmt.Sprintf("openai %s at %s, api key %s", model, endpoint, channels.SetOrNot(l.APIKey))
}

// Describe summarises the approval cycle for `plangate config check`.
func (p PlanModeConfig) Describe() string {
	if !p.Enabled {
		return "off"
	}
	nudges := "none"
	if len(p.Nudges) > 0 {
		var ds []string
		for _, d := range p.Nudges {
			ds = append(ds, shortDuration(d))
		}
		nudges = strings.Join(ds, " ")
	}
	timeout := "never"
	if p.ApprovalTimeout > 0 {
		timeout = shortDuration(p.ApprovalTimeout)
	}
	return fmt.Sprintf("on; start in plan %s; auto-approve %s; approval timeout %s; nudges %s",
		onOff(p.StartInPlan), onOff(p.AutoApprove), timeout, nudges)
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
	l := rc.Limits
	return fmt.Sprintf("run_command on for %d programs in the bwrap sandbox, %s; limits: %d processes, %s memory and %s CPU per process, files up to %s, /tmp %s, output %s",
		len(rc.Allow), net, l.Processes, l.Memory, l.CPUTime, l.FileSize, l.TmpSize, l.Output)
}

// openApprovalWarning is the start-up warning of `plangate serve` when a network channel
// runs without access.approvers: then whoever writes first in a chat owns its session and
// decides on its plans, which the operator should know. "" when there is
// nothing to warn about.
func (c *Config) openApprovalWarning() string {
	if len(c.Access.Approvers) > 0 {
		return ""
	}
	var open []string
	example := ""
	for _, r := range channelTable {
		if r.openToAll {
			if example == "" {
				example = r.name + ":" + r.exampleUser
			}
			if r.section(&c.Channels).On() {
				open = append(open, r.name)
			}
		}
	}
	if len(open) == 0 {
		return ""
	}
	return "access.approvers is empty: on " + strings.Join(open, ", ") +
		" the first person who writes in each chat owns its session and decides on its plans;" +
		" list who may decide in access.approvers (e.g. " + example + ")"
}

// describeStore names the database: the SQLite file, or the PostgreSQL server and
// database without the DSN's password.
func (c *Config) describeStore() string {
	if !c.Store.postgres() {
		return c.Store.Path
	}
	where, err := store.DescribeDSN(c.Store.DSN)
	if err != nil {
		return "postgres (" + err.Error() + ")"
	}
	if vars := c.envVars("store.dsn"); vars != "" {
		return where + " (dsn from " + vars + ")"
	}
	return where
}
