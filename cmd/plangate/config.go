package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/access"
	"github.com/plangate/plangate/core/conf"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/tools"
	"github.com/plangate/plangate/store"
)

// Config is plangate's whole configuration (docs/design.md §9). LoadConfig fills it from
// defaults, then the file, then ${VAR} references; paths in it are absolute. Fields marked
// "secret" are credentials: never log or print them.
type Config struct {
	Store     StoreConfig     `yaml:"store"`
	Plans     PlansConfig     `yaml:"plans"`
	Workspace WorkspaceConfig `yaml:"workspace"`
	LLM       LLMConfig       `yaml:"llm"`
	Agent     AgentConfig     `yaml:"agent"`
	PlanMode  PlanModeConfig  `yaml:"plan_mode"`
	// RetryPolicy bounds the agent's tries after plangate's own checks fail.
	RetryPolicy conf.RetryPolicy `yaml:"retry_policy"`
	Tools       ToolsConfig      `yaml:"tools"`
	Access      AccessConfig     `yaml:"access"`
	Channels    ChannelsConfig   `yaml:"channels"`
	HTTP        HTTPConfig       `yaml:"http"`
	Log         LogConfig        `yaml:"log"`

	file    string              // the config file as given, for messages
	origins map[string][]string // key path -> the environment variables its value came from
}

// StoreConfig selects the database: a SQLite file (the default) or a PostgreSQL database
// that several replicas may share (docs/design.md §14).
type StoreConfig struct {
	Driver string `yaml:"driver"`             // store.DriverSQLite or store.DriverPostgres
	Path   string `yaml:"path" config:"path"` // the SQLite file
	DSN    string `yaml:"dsn"`                // PostgreSQL; secret: it may carry the password
	// Retention is how long old rows are kept; serve prunes the rest in small batches.
	Retention RetentionConfig `yaml:"retention"`
}

// postgres reports whether the store is a PostgreSQL database.
func (s StoreConfig) postgres() bool { return s.Driver == store.DriverPostgres }

// PlansConfig locates the plan markdown files.
type PlansConfig struct {
	Dir string `yaml:"dir" config:"path"`
}

// WorkspaceConfig confines the workspace tools.
type WorkspaceConfig struct {
	Root       string `yaml:"root" config:"path"`
	PerSession bool   `yaml:"per_session"` // one sub-directory of Root per session
	// Seed is a directory copied into a workspace the first time it is used ("" = none);
	// the shipped config seeds the offline demo's sample files.
	Seed string `yaml:"seed" config:"path"`
}

// Provider selects the model implementation.
type Provider string

// Model providers. ProviderAuto is resolved by Config.ResolvedProvider.
const (
	ProviderAuto   Provider = "auto"
	ProviderOpenAI Provider = "openai"
	ProviderScript Provider = "script"
)

// LLMConfig configures the model provider.
type LLMConfig struct {
	Provider    Provider      `yaml:"provider"`
	BaseURL     string        `yaml:"base_url"`
	APIKey      string        `yaml:"api_key"` // secret
	Model       string        `yaml:"model"`
	PlanModel   string        `yaml:"plan_model"`           // "" = Model
	Script      string        `yaml:"script" config:"path"` // replayed by provider script
	Timeout     time.Duration `yaml:"timeout"`              // 0 = no timeout
	MaxRetries  int           `yaml:"max_retries"`
	TurnBudget  time.Duration `yaml:"turn_budget"` // one model call including retries; 0 = no limit
	Temperature *float64      `yaml:"temperature"` // nil = the endpoint's default
	Stream      *bool         `yaml:"stream"`      // show answers as drafts while the model writes them; nil = openai only
}

// Streams reports whether answers are shown as drafts with provider: llm.stream when set,
// else only for openai (the script's tests and demo keep whole replies unless asked).
func (l LLMConfig) Streams(provider Provider) bool {
	if l.Stream != nil {
		return *l.Stream
	}
	return provider == ProviderOpenAI
}

// AgentConfig bounds one agent turn.
type AgentConfig struct {
	SystemPrompt    string `yaml:"system_prompt"` // "" = the built-in prompt
	MaxIterations   int    `yaml:"max_iterations"`
	MaxSameFailure  int    `yaml:"max_same_failure"` // the same tool error this often in a row stops the turn
	HistoryMessages int    `yaml:"history_messages"`
	HistoryChars    int    `yaml:"history_chars"`     // character budget of the transcript sent
	ToolResultChars int    `yaml:"tool_result_chars"` // longer tool results are cut, with a note
	// MaxTokensPerSessionDay bounds the model tokens one conversation's calls use in a day
	// (UTC), in every phase; 0 = no limit.
	MaxTokensPerSessionDay int64 `yaml:"max_tokens_per_session_day"`
}

// PlanModeConfig configures the approval cycle and its nudges.
type PlanModeConfig struct {
	Enabled         bool            `yaml:"enabled"`
	StartInPlan     bool            `yaml:"start_in_plan"`
	AutoApprove     bool            `yaml:"auto_approve"`     // default for new sessions
	ApprovalTimeout time.Duration   `yaml:"approval_timeout"` // 0 = never expires
	Nudges          []time.Duration `yaml:"nudges"`           // one-shot, after the plan is posted
	NudgeGrace      time.Duration   `yaml:"nudge_grace"`
	// AutoApproveRules accept a proposal without a person when one fits (docs/design.md §12).
	AutoApproveRules []AutoApproveRuleConfig `yaml:"auto_approve_rules"`
	Planner          PlannerConfig           `yaml:"planner"`
	// WorkspaceCopy writes the accepted plan into the workspace as PLAN.md and PLAN.json,
	// which the agent may read and not change (docs/design.md §13).
	WorkspaceCopy bool `yaml:"workspace_copy"`
	// Boundary is the operator's limits every plan inherits (docs/design.md §13).
	Boundary plan.Boundary `yaml:"boundary"`
	// EscalateTo are chats, named as session ids name them ("slack:T1:C0OPS"), or
	// "approvers" (each of access.approvers in a direct message), told once about a
	// pending plan nobody decided on after its last reminder.
	EscalateTo []string `yaml:"escalate_to"`
	// MaxTokensPerPlan bounds the model tokens of one plan version, its planning and its
	// execution; 0 = no limit.
	MaxTokensPerPlan int64 `yaml:"max_tokens_per_plan"`
}

// ToolsConfig switches optional tools on and bounds the file tools.
type ToolsConfig struct {
	MaxWriteBytes int              `yaml:"max_write_bytes"` // largest file write_file/edit_file write
	RunCommand    RunCommandConfig `yaml:"run_command"`
	MCP           mcp.Config       `yaml:"mcp"` // MCP tool servers, gated like every other tool
}

// reach is what a command a plan grants may do here, for the words of the plans' grants:
// without a sandbox a command reaches the network whatever network says.
func (t ToolsConfig) reach() machine.Reach {
	rc := t.RunCommand
	return machine.Reach{Commands: rc.Enabled, Network: rc.Network || rc.Sandbox == "none"}
}

// RunCommandConfig gates run_command: argv only, programs from Allow, in a sandbox.
type RunCommandConfig struct {
	Enabled bool     `yaml:"enabled"`
	Allow   []string `yaml:"allow"`
	Sandbox string   `yaml:"sandbox"` // bwrap (default) or none
	Network bool     `yaml:"network"` // sandboxed commands may use the network
	// Destructive are commands that stop the turn before they run, for a person to decide
	// (machine.ParseCommandPattern says how an entry matches).
	Destructive []string `yaml:"destructive"`
	// Limits bound every sandboxed command (tools.Limits says how each is enforced).
	Limits RunLimitsConfig `yaml:"limits"`
}

// RunLimitsConfig is tools.run_command.limits.
type RunLimitsConfig struct {
	Processes int           `yaml:"processes"` // processes running at once
	Memory    ByteSize      `yaml:"memory"`    // address space per process
	CPUTime   time.Duration `yaml:"cpu_time"`  // CPU time per process
	FileSize  ByteSize      `yaml:"file_size"` // largest file a process writes
	TmpSize   ByteSize      `yaml:"tmp_size"`  // the private /tmp
	Output    ByteSize      `yaml:"output"`    // output before the command is stopped
}

// limits converts the section for the toolbox.
func (l RunLimitsConfig) limits() tools.Limits {
	return tools.Limits{Processes: l.Processes, Memory: int64(l.Memory), CPUTime: l.CPUTime,
		FileSize: int64(l.FileSize), TmpSize: int64(l.TmpSize), Output: int64(l.Output)}
}

// defaultRunLimits are tools.DefaultLimits as a config section.
func defaultRunLimits() RunLimitsConfig {
	d := tools.DefaultLimits
	return RunLimitsConfig{Processes: d.Processes, Memory: ByteSize(d.Memory), CPUTime: d.CPUTime,
		FileSize: ByteSize(d.FileSize), TmpSize: ByteSize(d.TmpSize), Output: ByteSize(d.Output)}
}

// AccessConfig lists who may decide on plans, and who may talk to the bot at all and how
// much (docs/design.md §12).
type AccessConfig struct {
	// Approvers are "channel:user id" (or "discord-role:role id"); empty means the session
	// owner and anyone in a direct message may decide.
	Approvers []string `yaml:"approvers"`
	// Policies: the first whose match fits a session sets its approvers and how many must
	// accept (docs/design.md §12).
	Policies []ApprovalPolicyConfig `yaml:"policies"`
	// AllowedUsers are who may talk to the bot, in approvers' form: on a channel an entry
	// names, only they and the approvers may; the other channels follow UnlistedChannels.
	AllowedUsers []string `yaml:"allowed_users"`
	// UnlistedChannels is open (everyone may talk on a channel no allowed_users entry
	// names) or closed (only approvers may).
	UnlistedChannels access.Unlisted `yaml:"unlisted_channels"`
	// RateLimit bounds how many messages one person may send.
	RateLimit RateLimitConfig `yaml:"rate_limit"`
}

// RateLimitConfig is access.rate_limit: a token bucket per person.
type RateLimitConfig struct {
	PerMinute int `yaml:"per_minute"` // sustained messages a minute; 0 = no limit
	Burst     int `yaml:"burst"`      // messages at once before the rate applies
}

// LogLevel is the minimum level logged.
type LogLevel string

// Log levels.
const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
)

// Slog maps the level to log/slog's, whose names are the same.
func (l LogLevel) Slog() slog.Level {
	var s slog.Level // info, the zero Level, unless l names another
	_ = s.UnmarshalText([]byte(l))
	return s
}

// LogFormat selects the slog handler.
type LogFormat string

// Log formats.
const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// LogConfig configures logging.
type LogConfig struct {
	Level  LogLevel  `yaml:"level"`
	Format LogFormat `yaml:"format"`
}

// defaultConfig returns the defaults of docs/design.md §9, before ${VAR} expansion and
// path resolution. The file overrides any part of it.
func defaultConfig() *Config {
	return &Config{
		Store:     StoreConfig{Driver: store.DriverSQLite, Path: "plangate.db", DSN: "${PLANGATE_DATABASE_URL}", Retention: defaultRetention()},
		Plans:     PlansConfig{Dir: "plans"},
		Workspace: WorkspaceConfig{Root: "workspace", PerSession: true},
		LLM: LLMConfig{
			Provider:   ProviderAuto,
			APIKey:     "${OPENAI_API_KEY}",
			Model:      "gpt-4.1-mini",
			Script:     "demo/script.yaml",
			Timeout:    60 * time.Second,
			MaxRetries: 2,
			TurnBudget: 3 * time.Minute,
		},
		Agent: AgentConfig{MaxIterations: 25, MaxSameFailure: engine.DefaultMaxSameFailure, HistoryMessages: 40, HistoryChars: 120_000, ToolResultChars: 16_000},
		PlanMode: PlanModeConfig{
			Enabled:       true,
			Nudges:        []time.Duration{10 * time.Minute, 30 * time.Minute, 60 * time.Minute},
			NudgeGrace:    15 * time.Minute,
			Planner:       PlannerConfig{Style: "conservative"}, // core.StyleConservative
			WorkspaceCopy: true,
		},
		RetryPolicy: conf.DefaultRetryPolicy,
		Channels:    defaultChannels(),
		Tools:       ToolsConfig{MaxWriteBytes: 1 << 20, RunCommand: RunCommandConfig{Sandbox: "bwrap", Limits: defaultRunLimits(), Destructive: slices.Clone(machine.DefaultDestructive)}}, // tools.DefaultMaxWriteBytes, tools.SandboxBwrap
		HTTP:        HTTPConfig{AdminToken: "${PLANGATE_ADMIN_TOKEN}", MaxBody: httpserver.DefaultMaxBody},
		Log:         LogConfig{Level: LogInfo, Format: LogText},
		Access:      AccessConfig{UnlistedChannels: access.UnlistedOpen, RateLimit: RateLimitConfig{Burst: defaultBurst}},
	}
}

// defaultBurst is access.rate_limit.burst's default.
const defaultBurst = 5

// ConfigPath picks the config file: the --config flag, else $PLANGATE_CONFIG, else
// config.yaml in the current directory.
func ConfigPath(flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if getenv != nil {
		if p := getenv("PLANGATE_CONFIG"); p != "" {
			return p
		}
	}
	return "config.yaml"
}

// ConfigError lists every problem found in a config file, one per line, each starting
// with "file:line:" (or "file:" when the key is not in the file).
type ConfigError struct {
	File     string
	Problems []string
}

func (e *ConfigError) Error() string { return strings.Join(e.Problems, "\n") }

// LoadConfig reads the config file at path. getenv resolves ${VAR} references (nil means
// an empty environment). The file is strict: unknown keys, wrong types and invalid values
// are reported together as a *ConfigError. Secret values never appear in the error.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading config: %s does not exist (pass --config or set PLANGATE_CONFIG)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}

	cfg := defaultConfig()
	cfg.file = path
	lines, err := decodeConfig(path, data, cfg)
	if err != nil {
		return nil, err
	}
	probs := append(cfg.expandEnv(getenv, dir), cfg.validate()...)
	if len(probs) > 0 {
		return nil, cfg.errorFor(probs, lines)
	}
	return cfg, nil
}

// problem is one invalid value, named by its key path so the error can give its line.
type problem struct {
	key string
	msg string
}

// errorFor orders the problems as the file does. A key the file leaves out is located at
// its nearest section in the file (for a channel without its token: the channel), or not
// at all, and then comes last.
func (c *Config) errorFor(probs []problem, lines map[string]int) *ConfigError {
	type located struct {
		line int // 0: not in the file
		msg  string
	}
	var ls []located
	for _, p := range probs {
		key := p.key
		for key != "" && lines[key] == 0 {
			key = key[:max(strings.LastIndexAny(key, ".["), 0)]
		}
		ls = append(ls, located{lines[key], p.msg})
	}
	slices.SortStableFunc(ls, func(a, b located) int {
		if a.line == 0 || b.line == 0 {
			return cmp.Compare(b.line, a.line) // unlocated last
		}
		return cmp.Compare(a.line, b.line)
	})
	e := &ConfigError{File: c.file}
	for _, l := range ls {
		e.Problems = append(e.Problems, locate(c.file, l.line, l.msg))
	}
	return e
}

// locate prefixes msg with "file:line:", or "file:" when line is 0 (unknown).
func locate(file string, line int, msg string) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, line, msg)
	}
	return fmt.Sprintf("%s: %s", file, msg)
}

// decodeConfig parses data into cfg, leaving defaults where the file is silent. It returns
// the line of every key path present in the file.
func decodeConfig(file string, data []byte, cfg *Config) (map[string]int, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, &ConfigError{File: file, Problems: []string{yamlProblem(file, err)}}
	}
	if len(f.Docs) > 1 {
		return nil, &ConfigError{File: file, Problems: []string{
			locate(file, 0, fmt.Sprintf("holds %d YAML documents; a config is one document", len(f.Docs)))}}
	}
	var body ast.Node
	if len(f.Docs) == 1 {
		body = f.Docs[0].Body
	}
	if _, null := body.(*ast.NullNode); body == nil || null {
		// An empty file is valid; goccy would zero the defaults if asked to decode it.
		return map[string]int{}, nil
	}

	// goccy stops at the first error, and its errors name Go types (or, for durations,
	// carry no line at all). The inspector finds every problem, in the file's terms.
	in := &inspector{file: file, lines: map[string]int{}}
	in.walk(body, reflect.TypeFor[Config](), "")
	if len(in.problems) > 0 {
		return nil, &ConfigError{File: file, Problems: in.problems}
	}
	if err := yaml.NodeToValue(body, cfg, yaml.Strict()); err != nil {
		return nil, &ConfigError{File: file, Problems: []string{yamlProblem(file, err)}}
	}
	return in.lines, nil
}

// yamlProblem turns a goccy error into one "file:line: message" line, without the source
// excerpt goccy would add (the excerpt could show a secret written into the file).
func yamlProblem(file string, err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return locate(file, ye.GetToken().Position.Line, ye.GetMessage())
	}
	return locate(file, 0, err.Error())
}
