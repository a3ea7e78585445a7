package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cli runs one plangate command line in-process and returns exit code, stdout, stderr.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	demo, _ := filepath.Abs(filepath.Join("..", "..", "demo", "script.yaml"))
	e := procEnv{stdin: strings.NewReader(stdin), stdout: &so, stderr: &se,
		getenv: func(k string) string {
			switch k {
			case "SCRIPT":
				return demo
			case "SEED":
				return demoSeed(t)
			}
			return ""
		},
		now: func() time.Time { return fixedNow }}
	code := run(context.Background(), args, e)
	return code, so.String(), se.String()
}

func TestInspectCommands(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig)
	if code, _, errOut := cli(t, "/plan on tidy the docs\n/plan revise also fix typos\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	code, out, _ := cli(t, "", "sessions", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "terminal:local:main") || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("sessions list: %d\n%s", code, out)
	}
	code, out, _ = cli(t, "", "sessions", "show", "terminal:local:main", "--json", "--config", cfg)
	var s map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("sessions show --json: %d\n%s", code, out)
	}
	for _, k := range []string{"id", "address", "phase", "auto_approve", "rejection_count", "owner", "pending_question", "plan"} {
		if _, ok := s[k]; !ok {
			t.Errorf("sessions show --json lacks %q", k)
		}
	}
	plan := s["plan"].(map[string]any)
	for _, k := range []string{"id", "version", "status", "title", "file", "steps"} {
		if _, ok := plan[k]; !ok {
			t.Errorf("sessions show --json plan lacks %q", k)
		}
	}
	if plan["version"].(float64) != 2 || s["rejection_count"].(float64) != 1 {
		t.Errorf("session json %v", s)
	}
	code, out, _ = cli(t, "", "plans", "list", "--json", "--config", cfg)
	var ps []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 2 {
		t.Fatalf("plans list --json: %d\n%s", code, out)
	}
	for _, k := range []string{"id", "session_id", "version", "status", "title", "file"} {
		if _, ok := ps[0][k]; !ok {
			t.Errorf("plans list --json lacks %q", k)
		}
	}
	if ps[0]["status"] != "revised" || ps[1]["status"] != "pending" {
		t.Errorf("plan statuses %v %v", ps[0]["status"], ps[1]["status"])
	}
	id := ps[1]["id"].(string)
	code, out, _ = cli(t, "", "plans", "show", id, "--markdown", "--config", cfg)
	if code != 0 || !strings.HasPrefix(out, "# Docs cleanup and changelog") || !strings.Contains(out, "## Steps") {
		t.Fatalf("plans show --markdown: %d\n%s", code, out)
	}
	code, out, _ = cli(t, "", "plans", "show", id, "--config", cfg)
	if code != 0 || !strings.Contains(out, "v2 · pending") {
		t.Fatalf("plans show: %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"sessions", "show", "nope", "--config", cfg},
		{"plans", "show", "nope", "--config", cfg},
	} {
		if code, _, errOut := cli(t, "", bad...); code != 1 || !strings.Contains(errOut, "list shows them") {
			t.Errorf("%v: %d %q", bad, code, errOut)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	good := writeConfig(t, defaultTestConfig)
	notDB := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(notDB, []byte("this is not a database, just text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	junkStore := writeConfig(t, "store: {path: "+notDB+"}\nllm: {provider: script, script: \"${SCRIPT}\"}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "a command is required"},
		{"unknown command", []string{"frob"}, 2, `unknown command "frob"`},
		{"bad flag", []string{"chat", "--nope"}, 2, "flag provided but not defined"},
		{"chat argument", []string{"chat", "extra", "--config", good}, 2, "takes no arguments"},
		{"sessions usage", []string{"sessions"}, 2, "plangate sessions list|show"},
		{"missing config", []string{"chat", "--config", "/nonexistent/plangate.yaml"}, 1, "/nonexistent/plangate.yaml"},
		{"unknown config key", []string{"config", "check", "--config", writeConfig(t, "store:\n  pth: x.db\n")}, 1, `unknown key "pth" in store`},
		{"malformed yaml", []string{"config", "check", "--config", writeConfig(t, "store: [unclosed\n")}, 1, "config.yaml"},
		{"store not a database", []string{"chat", "--config", junkStore}, 1, "file is not a SQLite database"},
		{"serve without channels", []string{"serve", "--config", good}, 1, "no chat channel is enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := cli(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, errOut, tc.want)
			}
		})
	}
	// The junk file is untouched.
	if b, _ := os.ReadFile(notDB); string(b) != "this is not a database, just text\n" {
		t.Fatal("plangate changed a file that is not its database")
	}
}

func TestConfigCheckAndVersion(t *testing.T) {
	code, out, _ := cli(t, "", "config", "check", "--config", writeConfig(t, defaultTestConfig))
	if code != 0 || !strings.Contains(out, "config ok") {
		t.Fatalf("config check: %d\n%s", code, out)
	}
	code, out, _ = cli(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "plangate ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

// TestDemoChangesTheWorkspaceOnlyAfterAccept walks the shipped demo: during planning the
// sample workspace is untouched (the model's write is blocked); after /plan accept the
// files are really changed.
func TestDemoChangesTheWorkspaceOnlyAfterAccept(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig)
	readme := filepath.Join(filepath.Dir(cfg), "workspace", "main", "README.md")
	original, err := os.ReadFile(filepath.Join(demoSeed(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg)
	if code != 0 || !strings.Contains(out, "Blocked write_file on README.md") {
		t.Fatalf("chat: %d %s\n%s", code, errOut, out)
	}
	if got, err := os.ReadFile(readme); err != nil || string(got) != string(original) {
		t.Fatalf("README changed before any plan was accepted (err %v)", err)
	}
	if code, _, errOut := cli(t, "/plan accept\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("accept: %d %s", code, errOut)
	}
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the command line", "to receive from", "(docs/guide.md)"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("README lacks %q after the accepted plan ran:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "workspace", "main", "CHANGELOG.md")); err == nil {
		t.Error("CHANGELOG.md was written although plan v1 did not include it")
	}
}

// A configuration elsewhere than the checkout, with no model configured, names the demo
// script it looked for, the key that sets it and where a relative one is read from (chat
// exits 1; the store, opened first, stays as it was: new and empty).
func TestMissingDemoScriptSaysWhere(t *testing.T) {
	cfg := writeConfig(t, "store:\n  path: plangate.db\n")
	code, _, errOut := cli(t, "/plan status\n", "chat", "--config", cfg)
	want := filepath.Join(filepath.Dir(cfg), "demo", "script.yaml")
	if code != 1 {
		t.Fatalf("chat: exit %d, want 1: %s", code, errOut)
	}
	for _, s := range []string{want, "llm.script", "configuration file's directory", "bundled demo script"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("the error lacks %q: %s", s, errOut)
		}
	}
	// config check says the same before chat would fail: an empty config is not "ok".
	empty := writeConfig(t, "")
	code, out, errOut := cli(t, "", "config", "check", "--config", empty)
	if code != 1 || strings.Contains(out, "config ok") || !strings.Contains(errOut, filepath.Join(filepath.Dir(empty), "demo", "script.yaml")) {
		t.Fatalf("config check of an empty config without its script: %d\n%s\n%s", code, out, errOut)
	}
}

// --help after a command made of subcommands is help: on stdout, exit status 0.
func TestGroupCommandHelp(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"sessions", "plangate sessions list|show ID"},
		{"plans", "plangate plans list|show ID"},
		{"nudges", "plangate nudges list [SESSION]"},
		{"config", "plangate config check [--config F]"},
		{"store", "plangate store backup FILE"},
	} {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := cli(t, "", c.cmd, flag)
			if code != 0 || !strings.Contains(out, c.want) || !strings.Contains(out, "Usage:") || errOut != "" {
				t.Errorf("plangate %s %s: %d\nstdout %q\nstderr %q", c.cmd, flag, code, out, errOut)
			}
		}
	}
}
