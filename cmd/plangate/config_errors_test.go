package main

import (
	"errors"
	"strings"
	"testing"
)

// loadProblems loads body and returns the problems of the *ConfigError, with the file's
// path replaced by FILE.
func loadProblems(t *testing.T, body string, vars map[string]string) []string {
	t.Helper()
	path := writeConfig(t, body)
	cfg, err := LoadConfig(path, env(vars))
	if err == nil {
		t.Fatalf("LoadConfig succeeded (%+v), want an error", exported(cfg))
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err is %T (%v), want *ConfigError", err, err)
	}
	if ce.Error() != strings.Join(ce.Problems, "\n") {
		t.Errorf("Error() = %q, want the problems one per line", ce.Error())
	}
	var out []string
	for _, p := range ce.Problems {
		if strings.Contains(p, "\n") {
			t.Errorf("problem spans lines: %q", p)
		}
		out = append(out, strings.ReplaceAll(p, path, "FILE"))
	}
	return out
}

func TestLoadConfigErrors(t *testing.T) {
	// A want ending in "*" is matched as a prefix (goccy words syntax errors itself).
	for _, tc := range []struct {
		name string
		body string
		vars map[string]string
		want []string // every problem, in order
	}{
		{
			name: "unknown top-level key",
			body: "store:\n  path: x.db\nstorage:\n  path: y.db\n",
			want: []string{`FILE:3: unknown key "storage" at the top level (did you mean "store"?)`},
		},
		{
			name: "unknown nested key",
			body: "# comment\nstore: {path: a.db}\nplans: {dir: p}\nworkspace:\n  root: w\n  per_session: true\n" +
				"llm:\n  provider: auto\n  model: m\nagent: {max_iterations: 3}\nlog: {level: info}\n" +
				"channels:\n  telegram:\n    tokne: abc\n",
			want: []string{`FILE:14: unknown key "tokne" in channels.telegram (did you mean "token"?)`},
		},
		{
			name: "every unknown key, with spelling variants",
			body: "agent:\n  maxIterations: 3\nplan_mode:\n  nudge-grace: 1m\nchannels:\n  terminal:\n    colour: red\n",
			want: []string{
				`FILE:2: unknown key "maxIterations" in agent (did you mean "max_iterations"?)`,
				`FILE:4: unknown key "nudge-grace" in plan_mode (did you mean "nudge_grace"?)`,
				`FILE:7: unknown key "colour" in channels.terminal (valid keys: enabled, attachments_dir)`,
			},
		},
		{
			name: "wrong types",
			body: "agent:\n  max_iterations: lots\nchannels:\n  telegram:\n    enabled: yes\nllm:\n  temperature: hot\n  max_retries: 1.5\n",
			want: []string{
				`FILE:2: agent.max_iterations: expected a whole number, got "lots"`,
				`FILE:5: channels.telegram.enabled: expected true or false, got "yes"`,
				`FILE:7: llm.temperature: expected a number, got "hot"`,
				`FILE:8: llm.max_retries: expected a whole number, got "1.5"`,
			},
		},
		{
			name: "wrong shapes",
			body: "llm: openai\naccess:\n  approvers: telegram:1\nchannels:\n  slack:\n    api_url: [a, b]\n",
			want: []string{
				`FILE:1: llm: expected a section of key: value lines, got "openai"`,
				`FILE:3: access.approvers: expected a list such as [a, b], got "telegram:1"`,
				`FILE:6: channels.slack.api_url: expected text, got a list`,
			},
		},
		{
			name: "not a mapping at all",
			body: "- store\n- llm\n",
			want: []string{`FILE:1: the file: expected a section of key: value lines, got a list`},
		},
		{
			name: "bad durations",
			body: "llm:\n  timeout: 10x\nplan_mode:\n  approval_timeout: 10\n  nudges: [10m, soon, 1h]\n  nudge_grace: 15 minutes\n",
			want: []string{
				`FILE:2: llm.timeout: expected a duration such as 30s, 10m or 1h, got "10x"`,
				`FILE:4: plan_mode.approval_timeout: expected a duration such as 30s, 10m or 1h, got "10"`,
				`FILE:5: plan_mode.nudges[1]: expected a duration such as 30s, 10m or 1h, got "soon"`,
				`FILE:6: plan_mode.nudge_grace: expected a duration such as 30s, 10m or 1h, got "15 minutes"`,
			},
		},
		{
			name: "syntax error",
			body: "store:\n  path: a.db\nagent: {max_iterations: 3\n",
			want: []string{`FILE:3: could not find flow mapping end token '}'`},
		},
		{
			name: "bad indentation",
			body: "agent:\n  max_iterations: 3\n history_messages: [\n",
			want: []string{`FILE:3: *`},
		},
		{
			name: "duplicate key",
			body: "agent:\n  max_iterations: 3\n  max_iterations: 4\n",
			want: []string{`FILE:3: mapping key "max_iterations" already defined at [2:3]`},
		},
		{
			name: "alias of the wrong type", // the decoder, not the inspector, catches this one
			body: "llm: {model: &m gpt}\nagent: {max_iterations: *m}\n",
			want: []string{`FILE:1: *`}, // goccy points at the anchored value
		},
		{
			name: "two documents",
			body: "store: {path: a.db}\n---\nstore: {path: b.db}\n",
			want: []string{`FILE: holds 2 YAML documents; a config is one document`},
		},
		{
			name: "enumerations",
			body: "llm:\n  provider: gpt\nlog:\n  level: verbose\n  format: xml\n",
			want: []string{
				`FILE:2: llm.provider is "gpt": expected auto, openai or script`,
				`FILE:4: log.level is "verbose": expected debug, info, warn or error`,
				`FILE:5: log.format is "xml": expected text or json`,
			},
		},
		{
			name: "numbers out of range",
			body: "agent: {max_iterations: 0, history_messages: -1, max_same_failure: 1}\nllm: {max_retries: -1, temperature: 2.5, timeout: -1s}\n" +
				"plan_mode: {approval_timeout: -5m, nudges: [0s, 500ms, 1s], nudge_grace: -1m}\nretry_policy: {max_verifier_retries: 21}\n",
			want: []string{
				`FILE:1: agent.max_iterations is 0: it must be at least 1`,
				`FILE:1: agent.history_messages is -1: it must be at least 1`,
				`FILE:1: agent.max_same_failure is 1: it must be at least 2`,
				`FILE:2: llm.max_retries is -1: it must be 0 or more`,
				`FILE:2: llm.temperature is 2.5: it must be between 0 and 2`,
				`FILE:2: llm.timeout is -1s: it must be 0s or more`,
				`FILE:3: plan_mode.approval_timeout is -5m0s: it must be 0s or more`,
				`FILE:3: plan_mode.nudge_grace is -1m0s: it must be 0s or more`,
				`FILE:3: plan_mode.nudges[0] is 0s: each nudge must be at least 1s`,
				`FILE:3: plan_mode.nudges[1] is 500ms: each nudge must be at least 1s`,
				`FILE:4: retry_policy.max_verifier_retries is 21: it must be between 0 and 20`,
			},
		},
		{
			name: "token budgets",
			body: "agent:\n  max_tokens_per_session_day: -5\nplan_mode:\n  max_tokens_per_plan: 999\n",
			want: []string{
				`FILE:2: agent.max_tokens_per_session_day is -5: it must be 0 (no limit) or at least 1000 tokens`,
				`FILE:4: plan_mode.max_tokens_per_plan is 999: it must be 0 (no limit) or at least 1000 tokens`,
			},
		},
		{
			name: "token budget not a number",
			body: "plan_mode:\n  max_tokens_per_plan: 400k\n",
			want: []string{`FILE:2: plan_mode.max_tokens_per_plan: expected a whole number, got "400k"`},
		},
		{
			name: "temperature not a number",
			body: "llm:\n  temperature: .nan\n",
			want: []string{`FILE:2: llm.temperature is NaN: it must be between 0 and 2`},
		},
		{
			// store.lease_linger is not a key: a session's lease is released when its turn
			// ends. A config that still sets it is refused with the key named.
			name: "store.lease_linger",
			body: "store:\n  path: plangate.db\n  lease_linger: 1s\n",
			want: []string{`FILE:3: unknown key "lease_linger" in store (valid keys: driver, path, dsn, retention)`},
		},
		{
			name: "start in plan without plan mode",
			body: "plan_mode:\n  enabled: false\n  start_in_plan: true\n",
			want: []string{`FILE:3: plan_mode.start_in_plan is true but plan_mode.enabled is false: enable plan mode or drop start_in_plan`},
		},
		{
			name: "approvers",
			body: "access:\n  approvers:\n    - telegram:1\n    - alice\n    - irc:bob\n    - 'slack:'\n    - discord-role:42\n    - 'terminal:a b'\n    - web:alice\n",
			want: []string{
				`FILE:4: access.approvers[1] is "alice": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
				`FILE:5: access.approvers[2] is "irc:bob": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
				`FILE:6: access.approvers[3] is "slack:": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
				`FILE:8: access.approvers[5] is "terminal:a b": expected channel:user-id with channel terminal, telegram, slack, discord or web (or discord-role:role-id)`,
			},
		},
		{
			name: "empty paths and allow entries",
			body: "store: {path: ''}\nplans: {dir: ''}\nworkspace: {root: ''}\ntools: {run_command: {allow: [go, ' ']}}\n",
			want: []string{
				`FILE:1: store.path is empty: set it to a path (relative paths start at the config file's directory)`,
				`FILE:2: plans.dir is empty: set it to a path (relative paths start at the config file's directory)`,
				`FILE:3: workspace.root is empty: set it to a path (relative paths start at the config file's directory)`,
				`FILE:4: tools.run_command.allow[1] is empty: list program names such as go or git`,
			},
		},
		{
			name: "tools limits and sandbox",
			body: "tools:\n  max_write_bytes: 0\n  run_command: {enabled: true, sandbox: docker, network: yes-please}\n",
			want: []string{
				`FILE:3: tools.run_command.network: expected true or false, got "yes-please"*`,
			},
		},
		{
			name: "mcp read-only shapes",
			body: "tools:\n  mcp:\n    - {name: fs, command: [srv], read_only_tools: true}\n    - {name: web, url: 'http://x', trust_read_only: [stat]}\n",
			want: []string{
				`FILE:3: tools.mcp[0].read_only_tools: expected a list such as [a, b], got "true"`,
				`FILE:4: tools.mcp[1].trust_read_only: expected true or false, got a list*`,
			},
		},
		{
			name: "mcp read-only values",
			body: "tools:\n  mcp:\n    - name: fs\n      command: [srv]\n      trust_read_only: true\n      read_only_tools: [fs__stat]\n",
			want: []string{
				`FILE:6: tools.mcp[0].read_only_tools[0] is "fs__stat": is not a tool name: the server's own name of the tool (A-Z, a-z, 0-9, _ and -), without the "<server>__" prefix`,
				`FILE:6: tools.mcp[0].read_only_tools is set together with trust_read_only: true, which already makes every tool read-only; keep one of them`,
			},
		},
		{
			name: "plangate's own files inside the workspace",
			body: "store: {path: ws/plangate.db}\nplans: {dir: ws}\nworkspace: {root: ws}\n",
			want: []string{
				`FILE:1: store.path *`, // the whole message, with the paths, is in TestOwnFilesOutsideWorkspace
				`FILE:2: plans.dir *`,
			},
		},
		{
			name: "tools values",
			body: "tools:\n  max_write_bytes: 100000000\n  run_command: {enabled: true, sandbox: Bwrap}\n",
			want: []string{
				`FILE:2: tools.max_write_bytes is 100000000: it must be between 1 and 67108864 (64 MiB)`,
				`FILE:3: tools.run_command.sandbox is "Bwrap": expected bwrap or none`,
			},
		},
		{
			name: "run_command destructive",
			body: "tools:\n  run_command:\n    destructive: [\"git push --force\", \" \", \"<outside> -r\", \"rm -r <inside>\"]\n",
			want: []string{
				`FILE:3: tools.run_command.destructive[1] is empty: write a program and its arguments, such as "git push --force"`,
				`FILE:3: tools.run_command.destructive[2] starts with "<outside>": the first word is the program, such as git or rm`,
				`FILE:3: tools.run_command.destructive[3] has "<inside>": the only placeholder is <outside> (a path outside the workspace)`,
			},
		},
		{
			name: "run_command limits",
			body: "tools:\n  run_command:\n    limits:\n      processes: 0\n      memory: 1MiB\n      cpu_time: 10ms\n      file_size: 0\n      tmp_size: 4KiB\n      output: 100B\n",
			want: []string{
				`FILE:4: tools.run_command.limits.processes is 0: it must be between 1 and 65536 (processes running at once)`,
				`FILE:5: tools.run_command.limits.memory is 1MiB: it must be at least 16MiB (address space per process)`,
				`FILE:6: tools.run_command.limits.cpu_time is 10ms: it must be at least 1s (CPU time per process)`,
				`FILE:7: tools.run_command.limits.file_size is 0B: it must be at least 1KiB (the largest file a process writes)`,
				`FILE:8: tools.run_command.limits.tmp_size is 4KiB: it must be at least 1MiB (the size of the command's /tmp)`,
				`FILE:9: tools.run_command.limits.output is 100B: it must be at least 1KiB (output before the command is stopped)`,
			},
		},
		{
			name: "run_command limits that are not sizes",
			body: "tools:\n  run_command:\n    limits: {memory: 4GB, processes: many, cpu_time: 5}\n",
			want: []string{
				`FILE:3: tools.run_command.limits.memory: expected a size such as 1MiB, 512KiB or 1048576 (bytes), got "4GB"`,
				`FILE:3: tools.run_command.limits.processes: expected a whole number, got "many"`,
				`FILE:3: tools.run_command.limits.cpu_time: expected a duration such as 30s, 10m or 1h, got "5"`,
			},
		},
		{
			name: "no writes at all",
			body: "tools: {max_write_bytes: 0, run_command: {sandbox: ''}}\n",
			want: []string{
				`FILE:1: tools.run_command.sandbox is "": expected bwrap or none`,
				`FILE:1: tools.max_write_bytes is 0: it must be between 1 and 67108864 (64 MiB)`,
			},
		},
		{
			name: "urls",
			body: "llm: {base_url: 'localhost:11434/v1'}\nchannels:\n  telegram: {api_url: 'ftp://x'}\n  discord: {api_url: '/relative'}\n",
			want: []string{
				`FILE:1: llm.base_url is not an http:// or https:// URL`,
				`FILE:3: channels.telegram.api_url is not an http:// or https:// URL`,
				`FILE:4: channels.discord.api_url is not an http:// or https:// URL`,
			},
		},
		{
			name: "openai without key or base_url",
			body: "llm:\n  provider: openai\n",
			want: []string{`FILE:2: llm.provider is openai but llm.api_key and llm.base_url are empty: set OPENAI_API_KEY or llm.base_url`},
		},
		{
			name: "openai without model",
			body: "llm: {provider: openai, model: ''}\n",
			vars: map[string]string{"OPENAI_API_KEY": "k"},
			want: []string{`FILE:1: llm.model is empty: name the model to use, such as gpt-4.1-mini`},
		},
		{
			name: "script without a file",
			body: "llm: {script: ''}\n",
			want: []string{`FILE:1: llm.script is empty: set it to a script file such as demo/script.yaml`},
		},
		{
			name: "tokens missing, named by their variables",
			body: "channels:\n  telegram: {enabled: true}\n  slack:\n    enabled: true\n  discord:\n    enabled: true\n    token: ${MY_DISCORD}\n",
			want: []string{
				`FILE:2: channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN`,
				`FILE:3: channels.slack.bot_token is empty: set SLACK_BOT_TOKEN`,
				`FILE:3: channels.slack.app_token is empty: set SLACK_APP_TOKEN`,
				`FILE:7: channels.discord.token is empty: set MY_DISCORD`,
			},
		},
		{
			name: "problems in file order",
			body: "channels:\n  telegram:\n    enabled: true\nllm:\n  provider: openai\nagent: {max_iterations: 0}\n",
			want: []string{
				`FILE:2: channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN`,
				`FILE:5: llm.provider is openai but llm.api_key and llm.base_url are empty: set OPENAI_API_KEY or llm.base_url`,
				`FILE:6: agent.max_iterations is 0: it must be at least 1`,
			},
		},
		{
			name: "token empty in the file",
			body: "channels:\n  telegram:\n    enabled: true\n    token: \"\"\n",
			want: []string{`FILE:4: channels.telegram.token is empty: set channels.telegram.token`},
		},
		{
			name: "malformed reference",
			body: "llm:\n  model: ${MODEL\n",
			want: []string{`FILE:2: llm.model has a malformed ${...} reference: write ${NAME}`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, tc.vars)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, want := range tc.want {
				if prefix, ok := strings.CutSuffix(want, "*"); ok && strings.HasPrefix(got[i], prefix) {
					continue
				}
				if got[i] != want {
					t.Errorf("problem %d\n got %s\nwant %s", i, got[i], want)
				}
			}
		})
	}
}

// goccy/go-yaml v1.19 reads [a:b] nested in a flow mapping as a mapping (issue #832). The
// error must say what to do; should a newer goccy read it as text, loading must then work.
func TestLoadConfigColonInNestedFlowList(t *testing.T) {
	path := writeConfig(t, "access: {approvers: [telegram:1]}\n")
	cfg, err := LoadConfig(path, env(nil))
	if err == nil {
		if got := cfg.Access.Approvers; len(got) != 1 || got[0] != "telegram:1" {
			t.Errorf("approvers = %q, want [telegram:1]", got)
		}
		return
	}
	want := path + `:1: access.approvers[0]: expected text, got a section (put quotes around text that contains a colon)`
	if err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// Secrets come from the environment; no error and no summary may show them, even when a
// secret lands in the wrong key.
func TestSecretsNeverLeak(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":     "sk-SECRET-openai-0001",
		"TELEGRAM_BOT_TOKEN": "123456:SECRET-telegram-0002",
		"SLACK_BOT_TOKEN":    "xoxb-SECRET-slack-0003",
		"SLACK_APP_TOKEN":    "xapp-SECRET-slack-0004",
		"DISCORD_BOT_TOKEN":  "SECRET-discord-0005",
	}
	leaks := func(t *testing.T, what, text string) {
		t.Helper()
		for name, v := range secrets {
			if strings.Contains(text, v) {
				t.Errorf("%s shows the value of %s:\n%s", what, name, text)
			}
		}
	}

	bad := map[string]string{
		"secrets in the wrong keys": `
llm:
  provider: ${OPENAI_API_KEY}
  base_url: ${OPENAI_API_KEY}
log:
  level: ${TELEGRAM_BOT_TOKEN}
  format: ${DISCORD_BOT_TOKEN}
access:
  approvers: ["${SLACK_BOT_TOKEN}", "${SLACK_APP_TOKEN}"]
channels:
  telegram: {api_url: "${TELEGRAM_BOT_TOKEN}"}
agent: {max_iterations: 0}
`,
		"secret-bearing keys with wrong types": "channels:\n  telegram:\n    token: [sk-literal-in-file]\n  slack:\n    bot_token: {x: y}\n",
		"unknown key beside secrets":           "channels:\n  slack:\n    enabled: true\n    bot_tokn: ${SLACK_BOT_TOKEN}\n",
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, body), env(secrets))
			if err == nil {
				t.Fatal("LoadConfig succeeded, want errors")
			}
			leaks(t, "error", err.Error())
			if strings.Contains(err.Error(), "sk-literal-in-file") {
				t.Errorf("error shows a token written into the file:\n%v", err)
			}
			if name == "secrets in the wrong keys" {
				for _, want := range []string{"llm.provider is the value of OPENAI_API_KEY", "access.approvers[1] is the value of SLACK_APP_TOKEN", "agent.max_iterations is 0"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q:\n%v", want, err)
					}
				}
			}
		})
	}

	t.Run("valid config summary", func(t *testing.T) {
		body := `
llm:
  base_url: "https://user:${OPENAI_API_KEY}@llm.example/v1?key=${OPENAI_API_KEY}"
channels:
  telegram: {enabled: true, api_url: "http://h/bot?t=${TELEGRAM_BOT_TOKEN}"}
  slack: {enabled: true}
  discord: {enabled: true}
`
		cfg, err := LoadConfig(writeConfig(t, body), env(secrets))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Channels.Discord.Token != secrets["DISCORD_BOT_TOKEN"] {
			t.Fatalf("discord token not expanded: the leak checks below would prove nothing")
		}
		leaks(t, "Describe()", cfg.Describe())
		_, why := cfg.ResolvedProvider(env(secrets))
		leaks(t, "ResolvedProvider", why)
		if !strings.Contains(cfg.Describe(), "at https://llm.example/v1, api key set") {
			t.Errorf("Describe() does not show the redacted endpoint:\n%s", cfg.Describe())
		}
	})
}
