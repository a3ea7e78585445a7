package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/channels/slack"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/channels/terminal"
	"github.com/plangate/plangate/channels/web"
	"github.com/plangate/plangate/core/conf"
)

// writeConfig writes body to config.yaml in a fresh directory and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// exported drops the bookkeeping fields so configs can be compared by value; an empty
// list and a missing one mean the same.
func exported(c *Config) Config {
	out := *c
	out.file, out.origins = "", nil
	if len(out.Access.Approvers) == 0 {
		out.Access.Approvers = nil
	}
	if len(out.Access.AllowedUsers) == 0 {
		out.Access.AllowedUsers = nil
	}
	if len(out.Tools.RunCommand.Allow) == 0 {
		out.Tools.RunCommand.Allow = nil
	}
	if len(out.Channels.Telegram.AllowedChats) == 0 {
		out.Channels.Telegram.AllowedChats = nil
	}
	if len(out.Channels.Slack.AllowedChannels) == 0 {
		out.Channels.Slack.AllowedChannels = nil
	}
	if len(out.Channels.Discord.AllowedChannels) == 0 {
		out.Channels.Discord.AllowedChannels = nil
	}
	if len(out.Channels.Discord.GuildIDs) == 0 {
		out.Channels.Discord.GuildIDs = nil
	}
	if len(out.Channels.Web.Users) == 0 {
		out.Channels.Web.Users = nil
	}
	return out
}

// wantDefaults is docs/design.md §9 written out by hand, with paths resolved against dir.
func wantDefaults(dir string) Config {
	return Config{
		Store: StoreConfig{Driver: "sqlite", Path: filepath.Join(dir, "plangate.db"),
			Retention: RetentionConfig{Transcripts: 90 * Day, Outbox: 30 * Day, Inbound: 2 * Day, Audit: 365 * Day}},
		Plans:     PlansConfig{Dir: filepath.Join(dir, "plans")},
		Workspace: WorkspaceConfig{Root: filepath.Join(dir, "workspace"), PerSession: true},
		LLM: LLMConfig{
			Provider:   "auto",
			Model:      "gpt-4.1-mini",
			Script:     filepath.Join(dir, "demo", "script.yaml"),
			Timeout:    60 * time.Second,
			MaxRetries: 2,
			TurnBudget: 3 * time.Minute,
		},
		Agent: AgentConfig{MaxIterations: 25, MaxSameFailure: 3, HistoryMessages: 40, HistoryChars: 120000, ToolResultChars: 16000},
		PlanMode: PlanModeConfig{
			Enabled:       true,
			Nudges:        []time.Duration{10 * time.Minute, 30 * time.Minute, time.Hour},
			NudgeGrace:    15 * time.Minute,
			Planner:       PlannerConfig{Style: "conservative"},
			WorkspaceCopy: true,
		},
		RetryPolicy: conf.RetryPolicy{MaxVerifierRetries: 2},
		Channels: ChannelsConfig{
			Terminal: terminal.Config{Enabled: true, AttachmentsDir: filepath.Join(dir, "plans")},
			Telegram: telegram.Config{RequireMentionInGroups: true, LongReplyAsFile: 12000, PollTimeout: 50 * time.Second},
			Slack:    slack.Config{LongReplyAsFile: 20000},
			Discord:  discord.Config{LongReplyAsFile: 6000},
			Web: web.Config{SessionTTL: 7 * 24 * time.Hour, MaxConversations: 100, MaxStreams: 10,
				MaxMessageBytes: 32 << 10},
			OutboxMaxAge: 24 * time.Hour,
		},
		Tools: ToolsConfig{MaxWriteBytes: 1 << 20, RunCommand: RunCommandConfig{Sandbox: "bwrap", Limits: RunLimitsConfig{Processes: 1024, Memory: 4 << 30, CPUTime: 5 * time.Minute, FileSize: 1 << 30, TmpSize: 512 << 20, Output: 16 << 20},
			Destructive: []string{"git push --force", "git push -f", "git push --force-with-lease", "git push --mirror", "git push --delete", "git push +*",
				"git reset --hard", "git clean -f", "git branch -D", "rm -r <outside>", "rm -R <outside>", "rm --recursive <outside>"}}},
		HTTP:   HTTPConfig{MaxBody: 1 << 20},
		Log:    LogConfig{Level: "info", Format: "text"},
		Access: AccessConfig{UnlistedChannels: "open", RateLimit: RateLimitConfig{Burst: 5}},
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"empty file", ""},
		{"only comments", "# nothing here\n\n"},
		{"document marker", "---\n"},
		{"null document", "~\n"},
		{"null sections", "store:\nllm:\nchannels:\n  telegram:\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.body)
			cfg, err := LoadConfig(path, env(nil))
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if got, want := exported(cfg), wantDefaults(filepath.Dir(path)); !reflect.DeepEqual(got, want) {
				t.Errorf("config\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadConfigNilGetenvIsEmptyEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "from-the-process")
	cfg, err := LoadConfig(writeConfig(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.APIKey != "" {
		t.Errorf("api_key = %q, want empty: a nil getenv must not read the process environment", cfg.LLM.APIKey)
	}
}

// The shipped config.yaml must load with nothing set, and spell out exactly the defaults.
func TestLoadConfigShippedFile(t *testing.T) {
	const path = "../../config.yaml"
	cfg, err := LoadConfig(path, env(nil))
	if err != nil {
		t.Fatalf("LoadConfig(%s): %v", path, err)
	}
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The one deliberate difference: the shipped file seeds new workspaces with the demo's
	// sample files.
	want := wantDefaults(dir)
	want.Workspace.Seed = filepath.Join(dir, "demo", "workspace")
	if got := exported(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("shipped config differs from the defaults\n got %+v\nwant %+v", got, want)
	}
	if p, why := cfg.ResolvedProvider(env(nil)); p != ProviderScript || why != "no OPENAI_API_KEY or llm.base_url: using the bundled demo script" {
		t.Errorf("ResolvedProvider = %q, %q", p, why)
	}
	if !cfg.Channels.Terminal.Enabled || cfg.Channels.Telegram.Enabled || cfg.Channels.Slack.Enabled || cfg.Channels.Discord.Enabled {
		t.Errorf("channels = %+v, want only terminal", cfg.Channels)
	}
}

func TestLoadConfigValues(t *testing.T) {
	body := `
store: {path: data/pg.db}
llm:
  provider: openai
  base_url: http://localhost:11434/v1
  api_key: ""
  model: llama3
  plan_model: llama3-big
  timeout: 2m30s
  max_retries: 0
  temperature: 0.2
agent: {system_prompt: "Be brief.", max_iterations: 5, history_messages: 1}
plan_mode:
  enabled: true
  start_in_plan: true
  auto_approve: true
  approval_timeout: 24h
  nudges: [1s, 90s]
  nudge_grace: 0s
tools: {max_write_bytes: 4096, run_command: {enabled: true, allow: [go, git], sandbox: none, network: true, destructive: ["git push --force"],
  limits: {processes: 64, memory: 2GiB, cpu_time: 90s, file_size: 8MiB, tmp_size: 64MiB, output: 1048576}}}
access:
  approvers: [telegram:123456, slack:U0123ABC, discord:4567, discord-role:99, terminal:alice]
log: {level: debug, format: json}
`
	cfg, err := LoadConfig(writeConfig(t, body), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Temperature == nil || *cfg.LLM.Temperature != 0.2 {
		t.Errorf("temperature = %v, want 0.2", cfg.LLM.Temperature)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"llm.provider", cfg.LLM.Provider, ProviderOpenAI},
		{"llm.model", cfg.LLM.Model, "llama3"},
		{"llm.plan_model", cfg.LLM.PlanModel, "llama3-big"},
		{"llm.timeout", cfg.LLM.Timeout, 150 * time.Second},
		{"llm.max_retries", cfg.LLM.MaxRetries, 0},
		{"agent.system_prompt", cfg.Agent.SystemPrompt, "Be brief."},
		{"agent.max_iterations", cfg.Agent.MaxIterations, 5},
		{"agent.history_messages", cfg.Agent.HistoryMessages, 1},
		{"plan_mode.start_in_plan", cfg.PlanMode.StartInPlan, true},
		{"plan_mode.auto_approve", cfg.PlanMode.AutoApprove, true},
		{"plan_mode.approval_timeout", cfg.PlanMode.ApprovalTimeout, 24 * time.Hour},
		{"plan_mode.nudges", cfg.PlanMode.Nudges, []time.Duration{time.Second, 90 * time.Second}},
		{"plan_mode.nudge_grace", cfg.PlanMode.NudgeGrace, time.Duration(0)},
		{"tools.run_command", cfg.Tools.RunCommand, RunCommandConfig{Enabled: true, Allow: []string{"go", "git"}, Sandbox: "none", Network: true,
			Destructive: []string{"git push --force"},
			Limits:      RunLimitsConfig{Processes: 64, Memory: 2 << 30, CPUTime: 90 * time.Second, FileSize: 8 << 20, TmpSize: 64 << 20, Output: 1 << 20}}},
		{"tools.max_write_bytes", cfg.Tools.MaxWriteBytes, 4096},
		{"access.approvers", len(cfg.Access.Approvers), 5},
		{"log.level", cfg.Log.Level, LogDebug},
		{"log.level slog", cfg.Log.Level.Slog(), slog.LevelDebug},
		{"log.format", cfg.Log.Format, LogJSON},
		{"workspace (default kept)", cfg.Workspace.PerSession, true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestLoadConfigAnchors(t *testing.T) {
	body := "llm: {max_retries: &n 7}\nagent: {max_iterations: *n, history_messages: 9}\n"
	cfg, err := LoadConfig(writeConfig(t, body), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.MaxRetries != 7 || cfg.Agent.MaxIterations != 7 || cfg.Agent.HistoryMessages != 9 {
		t.Errorf("max_retries, max_iterations, history_messages = %d, %d, %d; want 7, 7, 9",
			cfg.LLM.MaxRetries, cfg.Agent.MaxIterations, cfg.Agent.HistoryMessages)
	}
}

func TestLoadConfigEmptyListsAndNulls(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "plan_mode:\n  nudges: []\n  nudge_grace:\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.PlanMode.Nudges) != 0 {
		t.Errorf("nudges = %v, want none: [] switches nudges off", cfg.PlanMode.Nudges)
	}
	if cfg.PlanMode.NudgeGrace != 15*time.Minute {
		t.Errorf("nudge_grace = %v, want the default 15m for a null value", cfg.PlanMode.NudgeGrace)
	}
}

func TestLoadConfigEnvExpansion(t *testing.T) {
	vars := map[string]string{
		"OPENAI_API_KEY": "sk-test",
		"MODEL":          "gpt-x",
		"PROMPT":         "line one\nkey: [not, yaml, structure",
		"APPROVER":       "telegram:42",
		"DATA":           "var/data",
	}
	body := `
llm:
  model: ${MODEL}-mini
  plan_model: ${UNSET_VAR}
agent:
  system_prompt: ${PROMPT}
access:
  approvers: ["${APPROVER}", "slack:${UNSET_TOO}U1"]
store:
  path: ${DATA}/pg.db
`
	path := writeConfig(t, body)
	cfg, err := LoadConfig(path, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"default api_key reference", cfg.LLM.APIKey, "sk-test"},
		{"reference inside text", cfg.LLM.Model, "gpt-x-mini"},
		{"unset variable is empty", cfg.LLM.PlanModel, ""},
		{"value with YAML syntax stays one string", cfg.Agent.SystemPrompt, vars["PROMPT"]},
		{"list elements", cfg.Access.Approvers, []string{"telegram:42", "slack:U1"}},
		{"expanded before path resolution", cfg.Store.Path, filepath.Join(filepath.Dir(path), "var", "data", "pg.db")},
		{"origins", cfg.origins["access.approvers[0]"], []string{"APPROVER"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestExpandRefs(t *testing.T) {
	getenv := env(map[string]string{"A": "1", "B_2": "two"})
	for _, tc := range []struct {
		in, want string
		vars     []string
		ok       bool
	}{
		{"plain", "plain", nil, true},
		{"${A}", "1", []string{"A"}, true},
		{"x${A}y${B_2}z", "x1ytwoz", []string{"A", "B_2"}, true},
		{"$A and $$", "$A and $$", nil, true}, // only ${NAME} is a reference
		{"${NOPE}", "", []string{"NOPE"}, true},
		{"${A", "${A", nil, false},
		{"${}", "${}", nil, false},
		{"${1X}", "${1X}", nil, false},
		{"${A-B} ${A}", "${A-B} 1", []string{"A"}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, vars, ok := expandRefs(tc.in, getenv)
			if got != tc.want || !reflect.DeepEqual(vars, tc.vars) || ok != tc.ok {
				t.Errorf("expandRefs(%q) = %q, %v, %v; want %q, %v, %v", tc.in, got, vars, ok, tc.want, tc.vars, tc.ok)
			}
		})
	}
}

func TestLoadConfigPaths(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "plangate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(root, "abs.db")
	body := "store: {path: " + abs + "}\n" +
		"plans: {dir: ../shared/plans}\n" +
		"workspace: {root: ws}\n" +
		"llm: {script: scripts/demo.yaml}\n" +
		"channels: {terminal: {attachments_dir: files}}\n"
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// Load through a relative path from another directory: paths must still start at the
	// config file's directory, not the working directory.
	t.Chdir(root)
	cfg, err := LoadConfig(filepath.Join("etc", "plangate", "config.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"store.path (absolute kept)", cfg.Store.Path, abs},
		{"plans.dir", cfg.Plans.Dir, filepath.Join(root, "etc", "shared", "plans")},
		{"workspace.root", cfg.Workspace.Root, filepath.Join(dir, "ws")},
		{"llm.script", cfg.LLM.Script, filepath.Join(dir, "scripts", "demo.yaml")},
		{"attachments_dir", cfg.Channels.Terminal.AttachmentsDir, filepath.Join(dir, "files")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "PLANGATE_CONFIG") {
		t.Errorf("err = %v, want a missing-file error that mentions PLANGATE_CONFIG", err)
	}
}

func TestConfigPath(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		vars       map[string]string
		want       string
	}{
		{"flag wins", "/etc/pg.yaml", map[string]string{"PLANGATE_CONFIG": "/env.yaml"}, "/etc/pg.yaml"},
		{"environment", "", map[string]string{"PLANGATE_CONFIG": "/env.yaml"}, "/env.yaml"},
		{"default", "", nil, "config.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConfigPath(tc.flag, env(tc.vars)); got != tc.want {
				t.Errorf("ConfigPath = %q, want %q", got, tc.want)
			}
		})
	}
	if got := ConfigPath("", nil); got != "config.yaml" {
		t.Errorf("ConfigPath with nil getenv = %q", got)
	}
}

func TestResolvedProvider(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		vars    map[string]string
		want    Provider
		whyPart string
	}{
		{"auto without key", "", nil, ProviderScript, "no OPENAI_API_KEY or llm.base_url: using the bundled demo script"},
		{"auto with key", "", map[string]string{"OPENAI_API_KEY": "k"}, ProviderOpenAI, "OPENAI_API_KEY is set: using openai model gpt-4.1-mini"},
		{"auto with key from another variable", "llm: {api_key: '${MY_KEY}'}", map[string]string{"MY_KEY": "k"}, ProviderOpenAI, "MY_KEY is set"},
		{"auto with base_url", "llm: {base_url: 'http://localhost:11434/v1'}", nil, ProviderOpenAI, "llm.base_url is set"},
		{"auto ignoring an unused key", "llm: {api_key: ''}", map[string]string{"OPENAI_API_KEY": "k"}, ProviderScript, "OPENAI_API_KEY is set but llm.api_key does not use it"},
		{"auto with own script", "llm: {script: my.yaml}", nil, ProviderScript, "using the script /"},
		{"explicit script", "llm: {provider: script}", map[string]string{"OPENAI_API_KEY": "k"}, ProviderScript, "llm.provider is script"},
		{"explicit openai", "llm: {provider: openai}", map[string]string{"OPENAI_API_KEY": "k"}, ProviderOpenAI, "llm.provider is openai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(writeConfig(t, tc.body), env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			got, why := cfg.ResolvedProvider(env(tc.vars))
			if got != tc.want || !strings.Contains(why, tc.whyPart) {
				t.Errorf("ResolvedProvider = %q, %q; want %q, containing %q", got, why, tc.want, tc.whyPart)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	body := `
llm: {base_url: "https://proxy.example/v1"}
access:
  approvers: [telegram:1, slack:U2]
plan_mode: {approval_timeout: 90m}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true}
  slack: {enabled: true, api_url: "http://127.0.0.1:9/api/"}
`
	path := writeConfig(t, body)
	cfg, err := LoadConfig(path, env(map[string]string{"TELEGRAM_BOT_TOKEN": "t", "SLACK_BOT_TOKEN": "b", "SLACK_APP_TOKEN": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Describe()
	dir := filepath.Dir(path)
	for _, want := range []string{
		"config:    " + path,
		"store:     " + filepath.Join(dir, "plangate.db"),
		"plans:     " + filepath.Join(dir, "plans"),
		"workspace: " + filepath.Join(dir, "workspace") + " (a directory per session)",
		"model:     openai gpt-4.1-mini at https://proxy.example/v1, api key not set",
		"\n           (llm.base_url is set: using openai model gpt-4.1-mini)\n",
		"approval timeout 1h30m; nudges 10m 30m 1h",
		"channels:  telegram (token set), slack (bot token set, app token set, api http://127.0.0.1:9/api/)",
		"approvers: 2\n",
		"tools:     run_command off; writes up to 1048576 bytes",
		"log:       info, text",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe() lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "terminal") {
		t.Errorf("Describe() lists the disabled terminal channel:\n%s", got)
	}

	def, err := LoadConfig(writeConfig(t, ""), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got = def.Describe()
	for _, want := range []string{"model:     script " + def.LLM.Script, "channels:  terminal\n", "approvers: none listed", "plan mode: on; start in plan off; auto-approve off; approval timeout never"} {
		if !strings.Contains(got, want) {
			t.Errorf("default Describe() lacks %q:\n%s", want, got)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 10 * time.Minute: "10m", 90 * time.Minute: "1h30m", 45 * time.Second: "45s",
		0: "0s", 61 * time.Second: "1m1s", 500 * time.Millisecond: "500ms",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestStreamsDefaultsToOpenAIOnly(t *testing.T) {
	on, off := true, false
	tests := []struct {
		stream   *bool
		provider Provider
		want     bool
	}{
		{nil, ProviderOpenAI, true},
		{nil, ProviderScript, false},
		{&off, ProviderOpenAI, false},
		{&on, ProviderScript, true},
	}
	for _, tt := range tests {
		if got := (LLMConfig{Stream: tt.stream}).Streams(tt.provider); got != tt.want {
			t.Errorf("Streams(%v, %s) = %v, want %v", tt.stream, tt.provider, got, tt.want)
		}
	}
}
