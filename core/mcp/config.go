// Package mcp connects plangate to MCP tool servers (modelcontextprotocol/go-sdk): it
// starts each configured server, lists its tools, offers them to the model as
// <server>__<tool> through core's Toolbox port, restarts a server that dies, and reports
// every call to an Observer. Whether a tool may run is core's gate's decision; this
// package only says what kind each tool is: read-only only where the operator says so
// (trust_read_only, read_only_tools); a server's readOnlyHint is a claim, not a proof,
// and never makes a tool read-only.
package mcp

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/core/conf"
)

// Separator joins a server name and a tool name in the name the model sees.
const Separator = "__"

// DefaultCallTimeout bounds one tool call when a server sets no call_timeout.
const DefaultCallTimeout = 60 * time.Second

// Config is the tools.mcp section: the servers, in the order their tools are offered.
type Config []ServerConfig

// ServerConfig is one MCP server: a command speaking MCP over stdio, or a streamable HTTP
// endpoint. ${ENV} references are expanded by the config loader before Validate.
type ServerConfig struct {
	Name string `yaml:"name"` // [a-z0-9_-]+, without "__", not ending in "_"; the tools' name prefix
	// Command is the program and its first arguments; Args are appended to it.
	Command []string          `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"` // added to a small inherited environment
	Dir     string            `yaml:"dir"` // working directory of the command
	URL     string            `yaml:"url"` // streamable HTTP endpoint
	// Headers are sent with every HTTP request; their values are secrets: never printed.
	Headers map[string]string `yaml:"headers"`
	// CallTimeout bounds one tool call; 0 = DefaultCallTimeout.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// TrustReadOnly makes every tool of the server read-only (it runs while planning):
	// the operator vouches for the whole server.
	TrustReadOnly bool `yaml:"trust_read_only"`
	// ReadOnlyTools are the tools the operator declares read-only; every other tool is
	// mutating, whatever the server's hints say.
	ReadOnlyTools []string `yaml:"read_only_tools"`
	// DenyTools are never offered to the model and refused if called anyway.
	DenyTools []string `yaml:"deny_tools"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// Validate checks every server; each problem is a *conf.KeyError keyed by the
// server's index.
func (c Config) Validate() error {
	var errs []error
	seen := map[string]int{}
	for i, s := range c {
		key := fmt.Sprintf("mcp[%d]", i)
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			errs = append(errs, conf.BadValue(key+".name", s.Name, "is also the name of mcp[%d]: names must be unique", j))
		}
		seen[s.Name] = i
		errs = append(errs, s.validate(key))
	}
	return errors.Join(errs...)
}

func (s ServerConfig) validate(key string) error {
	var errs []error
	switch {
	case s.Name == "":
		errs = append(errs, conf.Invalid(key+".name", "is empty: name the server (its tools are offered as <name>__<tool>)"))
	case !nameRE.MatchString(s.Name) || strings.Contains(s.Name, Separator):
		errs = append(errs, conf.BadValue(key+".name", s.Name, "may hold only a-z, 0-9, _ and - (and not %q)", Separator))
	case strings.HasSuffix(s.Name, "_"):
		// Its tools' names would split elsewhere: "a_" + "__" + "b" reads as server "a".
		errs = append(errs, conf.BadValue(key+".name", s.Name, "may not end with \"_\": its tools, <name>__<tool>, would read as another server's"))
	}
	hasCmd, hasURL := len(s.Command) > 0, s.URL != ""
	switch {
	case hasCmd == hasURL:
		errs = append(errs, conf.Invalid(key, "needs exactly one of command (stdio) and url (streamable HTTP)"))
	case hasCmd && strings.TrimSpace(s.Command[0]) == "":
		errs = append(errs, conf.Invalid(key+".command", "starts with an empty program name"))
	case hasURL && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		errs = append(errs, conf.BadValue(key+".url", s.URL, "expected an http:// or https:// URL"))
	}
	if !hasCmd && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
		errs = append(errs, conf.Invalid(key, "sets args, env or dir, which only a command uses"))
	}
	if hasCmd && len(s.Headers) > 0 {
		errs = append(errs, conf.Invalid(key+".headers", "are for a url server only"))
	}
	if s.CallTimeout < 0 {
		errs = append(errs, conf.Invalid(key+".call_timeout", "is negative"))
	}
	errs = append(errs, toolList(key+".read_only_tools", s.Name, s.ReadOnlyTools)...)
	errs = append(errs, toolList(key+".deny_tools", s.Name, s.DenyTools)...)
	if s.TrustReadOnly && len(s.ReadOnlyTools) > 0 {
		errs = append(errs, conf.Invalid(key+".read_only_tools",
			"is set together with trust_read_only: true, which already makes every tool read-only; keep one of them"))
	}
	for _, t := range s.ReadOnlyTools {
		if slices.Contains(s.DenyTools, t) {
			errs = append(errs, conf.BadValue(key+".read_only_tools", t, "is also in deny_tools: a tool is either vouched for or denied"))
		}
	}
	return errors.Join(errs...)
}

// toolNameRE is a tool name as a server lists it: what the model APIs can carry after
// the "<server>__" prefix.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// toolList checks a list of server's own tool names (read_only_tools, deny_tools).
func toolList(key, server string, names []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range names {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case strings.TrimSpace(t) == "":
			errs = append(errs, conf.Invalid(k, "is an empty tool name"))
		case !toolNameRE.MatchString(t) || server != "" && strings.HasPrefix(t, server+Separator):
			errs = append(errs, conf.BadValue(k, t, "is not a tool name: the server's own name of the tool (A-Z, a-z, 0-9, _ and -), without the \"<server>__\" prefix"))
		case seen[t]:
			errs = append(errs, conf.BadValue(k, t, "is listed twice"))
		}
		seen[t] = true
	}
	return errs
}

// Describe summarises the servers for `plangate config check`, one line each; header
// and env values are left out (they may be secrets).
func (c Config) Describe() string {
	if len(c) == 0 {
		return "no MCP servers"
	}
	lines := make([]string, 0, len(c))
	for _, s := range c {
		lines = append(lines, s.describe())
	}
	return strings.Join(lines, "\n")
}

func (s ServerConfig) describe() string {
	var b strings.Builder
	b.WriteString(s.Name + ": ")
	if len(s.Command) > 0 {
		fmt.Fprintf(&b, "stdio %s", strings.Join(slices.Concat(s.Command, s.Args), " "))
		if len(s.Env) > 0 {
			fmt.Fprintf(&b, ", env %s", strings.Join(slices.Sorted(maps.Keys(s.Env)), ","))
		}
		if s.Dir != "" {
			fmt.Fprintf(&b, ", in %s", s.Dir)
		}
	} else {
		fmt.Fprintf(&b, "http %s", redactURL(s.URL))
		if len(s.Headers) > 0 {
			fmt.Fprintf(&b, ", headers %s (values hidden)", strings.Join(slices.Sorted(maps.Keys(s.Headers)), ","))
		}
	}
	fmt.Fprintf(&b, ", call timeout %s", s.callTimeout())
	switch {
	case s.TrustReadOnly:
		b.WriteString(", read-only by operator: every tool")
	case len(s.ReadOnlyTools) > 0:
		fmt.Fprintf(&b, ", read-only by operator: %s", strings.Join(s.ReadOnlyTools, ","))
	default:
		b.WriteString(", read-only by operator: none")
	}
	if len(s.DenyTools) > 0 {
		fmt.Fprintf(&b, ", denied: %s", strings.Join(s.DenyTools, ","))
	}
	return b.String()
}

func (s ServerConfig) callTimeout() time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return DefaultCallTimeout
}

// redactURL drops the user info and query of u, where a token may have been put.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	if p.User != nil || p.RawQuery != "" {
		p.User, p.RawQuery = nil, "…"
	}
	return p.String()
}

// startTimeout bounds starting a server and listing its tools: a short call timeout must
// not make a slow starter fail.
func (s ServerConfig) startTimeout() time.Duration { return max(s.callTimeout(), 15*time.Second) }
