package main

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core/conf"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/store"
)

// validate checks values the YAML types cannot, and returns every problem at once: each
// section's own, then those that span sections.
func (c *Config) validate() []problem {
	ps := c.sectionProblems(reflect.ValueOf(c).Elem(), "")
	ps = append(ps, c.ownFilesOutsideWorkspace()...)
	for _, r := range channelTable {
		if r.problems != nil {
			ps = append(ps, r.problems(c)...)
		}
	}

	if c.PlanMode.Boundary.RequireVerification && !c.Tools.RunCommand.Enabled {
		ps = append(ps, problem{"plan_mode.boundary.require_verification", "plan_mode.boundary.require_verification is true but tools.run_command.enabled is false: " +
			"plangate runs a plan's checks as commands, so no plan could be proposed; enable run_command (with its allow list) or drop require_verification"})
	}
	if slices.Contains(c.PlanMode.EscalateTo, escalateApprovers) &&
		!slices.ContainsFunc(c.Access.Approvers, func(a string) bool { _, ok := approverDM(a); return ok }) {
		ps = append(ps, problem{"plan_mode.escalate_to", "plan_mode.escalate_to names approvers, but access.approvers lists nobody plangate can message directly " +
			"(on " + strings.Join(directMessaged, " or ") + "): add such approvers, or name the chats to tell (channel:account:chat)"})
	}
	switch p, _ := c.ResolvedProvider(nil); p {
	case ProviderOpenAI:
		if c.LLM.APIKey == "" && c.LLM.BaseURL == "" {
			ps = append(ps, problem{"llm.provider", "llm.provider is openai but llm.api_key and llm.base_url are empty: set " +
				c.source("llm.api_key") + " or llm.base_url"})
		}
		if c.LLM.Model == "" {
			ps = append(ps, problem{"llm.model", "llm.model is empty: name the model to use, such as gpt-4.1-mini"})
		}
	case ProviderScript:
		if c.LLM.Script == "" {
			ps = append(ps, problem{"llm.script", "llm.script is empty: set it to a script file such as demo/script.yaml"})
		}
	}
	return append(ps, c.placeholders(reflect.ValueOf(c).Elem(), "")...)
}

// placeholderPrefix starts every placeholder of deploy/plangate.env.example.
const placeholderPrefix = "replace-with-"

// placeholders are the values in v (the config read from the file at path) still holding a
// placeholder of the deploy env template, such as a published admin token.
func (c *Config) placeholders(v reflect.Value, path string) []problem {
	var ps []problem
	switch v.Kind() {
	case reflect.Struct:
		for f, fv := range v.Fields() {
			if name := yamlName(f); name != "" && f.IsExported() {
				ps = append(ps, c.placeholders(fv, joinKey(path, name))...)
			}
		}
	case reflect.String:
		if strings.HasPrefix(v.String(), placeholderPrefix) {
			ps = append(ps, problem{path, path + " is still the placeholder of deploy/plangate.env.example: set " + c.source(path) + " to the real value"})
		}
	}
	return ps
}

// sectionProblems runs Validate on every section in v (a struct read from the file at
// path), looking into the sections that have none, such as channels. v is addressable:
// through its address a Validate with a value or a pointer receiver is found.
func (c *Config) sectionProblems(v reflect.Value, path string) []problem {
	var ps []problem
	for f, fv := range v.Fields() {
		name := yamlName(f)
		if name == "" {
			continue
		}
		key := joinKey(path, name)
		s, ok := fv.Addr().Interface().(conf.Validator)
		if ok {
			ps = append(ps, c.keyProblems(key, s.Validate())...)
		}
		// channels validates its own keys and holds the adapters' sections.
		if fv.Kind() == reflect.Struct && (!ok || fv.Type() == reflect.TypeFor[ChannelsConfig]()) {
			ps = append(ps, c.sectionProblems(fv, key)...)
		}
	}
	return ps
}

// keyProblems places what the section at prefix reported: keys get the section's path, a
// missing value names the variable to set, and a value from the environment is not shown.
func (c *Config) keyProblems(prefix string, err error) []problem {
	keyErrs, rest := conf.KeyErrors(err)
	var ps []problem
	for _, e := range keyErrs {
		key := joinKey(prefix, e.Key)
		msg := key + " " + e.Msg
		switch {
		case e.Unset:
			msg += ": set " + c.source(key)
		case e.Value != nil:
			msg = key + " is " + c.quoted(key, *e.Value) + ": " + e.Msg
		}
		ps = append(ps, problem{key, msg})
	}
	for _, err := range rest {
		msg, key := err.Error(), prefix
		if named, _, ok := strings.Cut(msg, ": "); ok && (named == prefix || strings.HasPrefix(named, prefix+".")) {
			key = named // a section that names its keys itself ("channels.web.users.alice: ...")
		} else {
			msg = prefix + ": " + msg
		}
		ps = append(ps, problem{key, msg})
	}
	return ps
}

// envVars names the environment variables key's ${VAR} references read ("A and B"), ""
// for none.
func (c *Config) envVars(key string) string { return strings.Join(c.origins[key], " and ") }

// source names what the user must set to give key a value: its variables, else the key.
func (c *Config) source(key string) string { return cmp.Or(c.envVars(key), key) }

// quoted shows a value in an error, unless it came from the environment, where a secret
// may have landed by mistake.
func (c *Config) quoted(key, value string) string {
	if vars := c.envVars(key); vars != "" {
		return "the value of " + vars
	}
	return strconv.Quote(value)
}

// checkPath reports a path left empty.
func checkPath(key, p string) error {
	if p == "" {
		return conf.Invalid(key, "is empty: set it to a path (relative paths start at the config file's directory)")
	}
	return nil
}

// checkNotNegative reports durations below zero, where zero means "none" or "no limit".
func checkNotNegative(key string, d time.Duration) error {
	if d < 0 {
		return conf.Invalid(key, "is %s: it must be 0s or more", d)
	}
	return nil
}

// Validate checks the channels section's own keys; the adapters' sections validate
// themselves.
func (c ChannelsConfig) Validate() error { return checkNotNegative("outbox_max_age", c.OutboxMaxAge) }

// Validate checks the store section: the driver, and the key that driver needs. A bad
// DSN is never quoted: it may carry a password.
func (s StoreConfig) Validate() error {
	return errors.Join(s.checkDriver(), s.Retention.check())
}

func (s StoreConfig) checkDriver() error {
	switch s.Driver {
	case store.DriverSQLite:
		return checkPath("path", s.Path)
	case store.DriverPostgres:
		if strings.TrimSpace(s.DSN) == "" {
			return conf.Unset("dsn")
		}
		if _, err := store.DescribeDSN(s.DSN); err != nil {
			return conf.Invalid("dsn", "is not a valid PostgreSQL connection string: write postgres://USER:PASSWORD@HOST:5432/DBNAME or host=HOST dbname=DBNAME ...")
		}
		return nil
	}
	return conf.OneOf("driver", s.Driver, store.DriverSQLite, store.DriverPostgres)
}

// Validate checks the plans section.
func (p PlansConfig) Validate() error { return checkPath("dir", p.Dir) }

// Validate checks the workspace section.
func (w WorkspaceConfig) Validate() error { return checkPath("root", w.Root) }

// Validate checks the llm section; which provider runs, and so what it needs, is decided
// across the section by Config.validate.
func (l LLMConfig) Validate() error {
	errs := []error{conf.OneOf("provider", string(l.Provider), string(ProviderAuto), string(ProviderOpenAI), string(ProviderScript))}
	if l.MaxRetries < 0 {
		errs = append(errs, conf.Invalid("max_retries", "is %d: it must be 0 or more", l.MaxRetries))
	}
	if t := l.Temperature; t != nil && !(*t >= 0 && *t <= 2) { // NaN fails both comparisons
		errs = append(errs, conf.Invalid("temperature", "is %g: it must be between 0 and 2", *t))
	}
	errs = append(errs, checkNotNegative("timeout", l.Timeout), checkNotNegative("turn_budget", l.TurnBudget))
	return errors.Join(append(errs, channels.CheckURL("base_url", l.BaseURL))...)
}

// Validate checks the agent section.
func (a AgentConfig) Validate() error {
	var errs []error
	for _, n := range []struct {
		key      string
		got, min int
	}{
		{"max_iterations", a.MaxIterations, 1},
		{"history_messages", a.HistoryMessages, 1},
		{"history_chars", a.HistoryChars, 1000},
		{"tool_result_chars", a.ToolResultChars, 200},
		{"max_same_failure", a.MaxSameFailure, 2}, // 1 would stop at an error the agent is meant to correct
	} {
		if n.got < n.min {
			errs = append(errs, conf.Invalid(n.key, "is %d: it must be at least %d", n.got, n.min))
		}
	}
	return errors.Join(append(errs, checkTokenBudget("max_tokens_per_session_day", a.MaxTokensPerSessionDay))...)
}

// minTokenBudget is the smallest token budget that is not 0 (off): one model call of a
// plan cycle sends a few thousand tokens, so less would stop every turn at its first call.
const minTokenBudget = 1000

// checkTokenBudget checks a token budget: 0 (no limit) or at least minTokenBudget.
func checkTokenBudget(key string, n int64) error {
	if n != 0 && n < minTokenBudget {
		return conf.Invalid(key, "is %d: it must be 0 (no limit) or at least %d tokens", n, minTokenBudget)
	}
	return nil
}

// Validate checks the plan_mode section.
func (p PlanModeConfig) Validate() error {
	errs := []error{checkNotNegative("approval_timeout", p.ApprovalTimeout), checkNotNegative("nudge_grace", p.NudgeGrace),
		checkTokenBudget("max_tokens_per_plan", p.MaxTokensPerPlan)}
	for i, d := range p.Nudges {
		if d < time.Second {
			errs = append(errs, conf.Invalid(fmt.Sprintf("nudges[%d]", i), "is %s: each nudge must be at least 1s", d))
		}
	}
	if p.StartInPlan && !p.Enabled {
		errs = append(errs, conf.Invalid("start_in_plan", "is true but plan_mode.enabled is false: enable plan mode or drop start_in_plan"))
	}
	errs = append(errs, conf.OneOf("planner.style", p.Planner.Style, string(engine.StyleConservative), string(engine.StyleAmbitious)))
	for i, a := range p.EscalateTo {
		if a == escalateApprovers {
			continue // checked against access.approvers (Config.validate)
		}
		if _, err := escalationAddress(a); err != nil {
			errs = append(errs, conf.Invalid(fmt.Sprintf("escalate_to[%d]", i), "is %q: %v", a, err))
		}
	}
	for _, problem := range p.Boundary.Problems() {
		field, msg, _ := strings.Cut(problem, " ") // "forbidden_paths[1] …" names its key
		errs = append(errs, conf.Invalid("boundary."+field, "%s", msg))
	}
	return errors.Join(append(errs, p.ruleProblems())...)
}

// Validate checks the tools section.
func (t ToolsConfig) Validate() error {
	errs := []error{conf.OneOf("run_command.sandbox", t.RunCommand.Sandbox, "bwrap", "none"), t.MCP.Validate()} // keyed mcp[i]: every problem of every server
	if n := t.MaxWriteBytes; n < 1 || n > maxWriteBytesLimit {
		errs = append(errs, conf.Invalid("max_write_bytes", "is %d: it must be between 1 and %d (64 MiB)", n, maxWriteBytesLimit))
	}
	errs = append(errs, t.RunCommand.Limits.problems()...)
	for i, d := range t.RunCommand.Destructive {
		if _, err := machine.ParseCommandPattern(d); err != nil {
			errs = append(errs, conf.Invalid(fmt.Sprintf("run_command.destructive[%d]", i), "%v", err))
		}
	}
	for i, a := range t.RunCommand.Allow {
		if strings.TrimSpace(a) == "" {
			errs = append(errs, conf.Invalid(fmt.Sprintf("run_command.allow[%d]", i), "is empty: list program names such as go or git"))
		}
	}
	return errors.Join(errs...)
}

// Bounds of tools.run_command.limits: below them common programs (a shell, git) cannot
// start; the memory bound is what a ByteSize reads.
const (
	minRunProcesses = 1
	maxRunProcesses = 1 << 16
	minRunMemory    = ByteSize(16 << 20)
	minRunCPUTime   = time.Second
	minRunFileSize  = ByteSize(1 << 10)
	minRunTmpSize   = ByteSize(1 << 20)
	minRunOutput    = ByteSize(1 << 10)
)

// problems checks tools.run_command.limits.
func (l RunLimitsConfig) problems() []error {
	var errs []error
	if n := l.Processes; n < minRunProcesses || n > maxRunProcesses {
		errs = append(errs, conf.Invalid("run_command.limits.processes", "is %d: it must be between %d and %d (processes running at once)", n, minRunProcesses, maxRunProcesses))
	}
	for _, b := range []struct {
		key      string
		low      bool
		got, min fmt.Stringer
		what     string
	}{
		{"cpu_time", l.CPUTime < minRunCPUTime, l.CPUTime, minRunCPUTime, "CPU time per process"},
		{"memory", l.Memory < minRunMemory, l.Memory, minRunMemory, "address space per process"},
		{"file_size", l.FileSize < minRunFileSize, l.FileSize, minRunFileSize, "the largest file a process writes"},
		{"tmp_size", l.TmpSize < minRunTmpSize, l.TmpSize, minRunTmpSize, "the size of the command's /tmp"},
		{"output", l.Output < minRunOutput, l.Output, minRunOutput, "output before the command is stopped"},
	} {
		if b.low {
			errs = append(errs, conf.Invalid("run_command.limits."+b.key, "is %s: it must be at least %s (%s)", b.got, b.min, b.what))
		}
	}
	return errs
}

// Validate checks the access section.
func (a AccessConfig) Validate() error {
	var errs []error
	for i, s := range a.Approvers {
		if !validApprover(s) {
			errs = append(errs, conf.BadValue(fmt.Sprintf("approvers[%d]", i), s, "%s", approverHint(nil)))
		}
	}
	errs = append(errs, a.talkProblems()...)
	return errors.Join(append(errs, a.policyProblems()...)...)
}

// Validate checks the log section.
func (l LogConfig) Validate() error {
	return errors.Join(
		conf.OneOf("level", string(l.Level), string(LogDebug), string(LogInfo), string(LogWarn), string(LogError)),
		conf.OneOf("format", string(l.Format), string(LogText), string(LogJSON)),
	)
}

func validApprover(s string) bool {
	kind, id, ok := strings.Cut(s, ":")
	if !ok || id == "" || strings.ContainsAny(id, " \t\r\n") {
		return false
	}
	for _, r := range channelTable {
		if kind == r.name || r.roleKind != "" && kind == r.roleKind {
			return true
		}
	}
	return false
}

// approverHint says what an approver entry looks like, naming the channels keep lets
// through (nil: all).
func approverHint(keep func(channelRow) bool) string {
	var roles []string
	for _, r := range channelTable {
		if r.roleKind != "" {
			roles = append(roles, r.roleKind+":role-id")
		}
	}
	return "expected channel:user-id with channel " + conf.OrList(channelNames(keep)) + " (or " + conf.OrList(roles) + ")"
}

// maxWriteBytesLimit bounds tools.max_write_bytes: a tool call carries the whole file.
const maxWriteBytesLimit = 64 << 20
