package engine_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/secrets"
	"github.com/plangate/plangate/core/tools"
)

// Fake credentials, assembled so that this file holds none whole.
var (
	fakeAWSKey = "AKIA" + "Z7VRSQ5TLXJ4QPNC"
	fakeGHPAT  = "ghp_" + "R8x2Lm4QvT9zKp3WnY7cJd5HsB1fGa6EuXo0"
)

// guardHarness is a harness with the real workspace tools (run_command allowing progs, in
// the bwrap sandbox where the host has it) and the real secret scanner.
func guardHarness(t *testing.T, progs []string, mutate ...func(*engine.Config)) *harness {
	t.Helper()
	h := newHarness(t, mutate...)
	cfg := tools.Config{RunCommand: len(progs) > 0, Allow: progs}
	if tools.CheckSandbox("", false) != nil && os.Getenv("CI") != "true" {
		cfg.Sandbox = tools.SandboxNone // a host without bwrap; CI has it
	}
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Secrets = sc
	h.tools, h.secrets = tools.New(cfg), sc
	h.open()
	return h
}

// toExecutingAll drives chat to executing a plan whose scope is the whole workspace.
func (h *harness) toExecutingAll(chat, title string) core.Plan {
	h.t.Helper()
	h.say(chat, "local", "/plan on")
	h.model.push(sessionID(chat), calls(call("exit_plan_mode", map[string]any{
		"title": title, "plan": []stepArg{{Step: "Do it"}},
		"scope": map[string]any{"allowed_paths": []string{"**"}},
	})))
	h.say(chat, "local", "plan "+title)
	h.say(chat, "local", "/plan accept")
	s := h.session(chat)
	if s.Phase != core.PhaseExecuting {
		h.t.Fatalf("setup: phase %s, want executing; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	if err := os.MkdirAll(filepath.Join(h.cfg.WorkspaceRoot, chat), 0o755); err != nil {
		h.t.Fatal(err)
	}
	return h.plan(s.PlanID)
}

// noSecretOnDisk fails when any file under the harness's directory (the SQLite database
// and its WAL, the plan files, the workspace) or any reply holds one of the secrets.
func noSecretOnDisk(t *testing.T, h *harness, secrets ...string) {
	t.Helper()
	err := filepath.WalkDir(h.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds the secret %.8s…", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.out.all() {
		for _, s := range secrets {
			if strings.Contains(r.Text, s) {
				t.Errorf("a reply shows the secret: %q", r.Text)
			}
		}
	}
}

// stoppedWith checks the stored stop of plan id and its audit row.
func stoppedWith(t *testing.T, h *harness, chat, id string, kind plan.StopKind) {
	t.Helper()
	got := h.plan(id)
	if got.Run.Stop == nil || got.Run.Stop.Kind != kind {
		t.Fatalf("the stored plan's run is %+v, want a %s stop", got.Run, kind)
	}
	evs, err := h.st.Events(t.Context(), sessionID(chat))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == core.EventStopped && strings.HasPrefix(e.Detail, string(kind)+": ") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d stopped audit rows of kind %s, want 1", n, kind)
	}
}

// A hostile model that writes a secret: write_file and edit_file are refused before they
// land, the turn stops with secret_detected (on the plan, audited), and the secret is in no
// file under the test's directory (store, WAL, plan files, workspace), no reply, and no
// later model request.
func TestSecretWriteIsRefusedAndHidden(t *testing.T) {
	for _, tc := range []struct {
		name string
		call core.ToolCall
	}{
		{"write_file", call("write_file", map[string]any{"path": "deploy/.env", "content": "REGION=eu\nAWS_ACCESS_KEY_ID=" + fakeAWSKey + "\n"})},
		{"edit_file", call("edit_file", map[string]any{"path": "notes.md", "old": "TOKEN=", "new": "TOKEN=" + fakeGHPAT})},
		{"allow comment", call("write_file", map[string]any{"path": "k.go", "content": "const k = \"" + fakeAWSKey + "\" // gitleaks:allow\n"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := guardHarness(t, nil)
			ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("TOKEN=\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := h.toExecutingAll("main", "Deploy")
			sid := sessionID("main")
			// The secret write comes after a harmless call in the same answer, and a second
			// write after it is not run.
			h.model.push(sid, calls(call("write_file", map[string]any{"path": "ok.txt", "content": "fine\n"}), tc.call,
				call("write_file", map[string]any{"path": "after.txt", "content": "x"})))
			rs := h.say("main", "local", "go on")
			mustContain(t, lastText(rs), "Stopped:", "would write a secret", "it was not run", "send a message")
			stoppedWith(t, h, "main", p.ID, plan.StopSecretDetected)
			if b, _ := os.ReadFile(filepath.Join(ws, "notes.md")); string(b) != "TOKEN=\n" {
				t.Fatalf("notes.md is %q, want it untouched", b)
			}
			for _, f := range []string{"deploy/.env", "k.go", "after.txt"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
					t.Errorf("%s was written", f)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
				t.Errorf("the harmless write before it did not run: %v", err)
			}
			rows := gateRows(t, h, "main")
			if last := rows[len(rows)-1]; last.Kind != engine.EventToolBlocked || last.Gate != engine.RuleSecret || last.Tool != tc.call.Name {
				t.Fatalf("last gate row %+v, want %s blocked by the secret rule", last, tc.call.Name)
			}
			// The next turn's model request has the call, its secret hidden.
			h.model.push(sid, text("understood"))
			h.say("main", "local", "continue")
			reqs := h.model.requests()
			var seen bool
			for _, m := range reqs[len(reqs)-1].Messages {
				for _, c := range m.ToolCalls {
					if c.ID == tc.call.ID {
						seen = true
						mustContain(t, string(c.Args), "[secret hidden: ")
					}
				}
			}
			if !seen {
				t.Fatal("the refused call is missing from the next model request")
			}
			noSecretOnDisk(t, h, fakeAWSKey, fakeGHPAT)
		})
	}
}

// A command whose output shows a secret stops the turn; the agent, the chat and the store
// see it hidden. A command with a secret on its command line is not run.
func TestSecretInCommandOutputStopsTheTurn(t *testing.T) {
	h := guardHarness(t, []string{"cat", "touch"})
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	// A person's file holds the key; the agent prints it.
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "creds"), []byte("aws_access_key_id = "+fakeAWSKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.toExecutingAll("main", "Inspect")
	sid := sessionID("main")
	h.model.push(sid, calls(call("run_command", map[string]any{"argv": []string{"cat", "creds"}})))
	rs := h.say("main", "local", "show me")
	mustContain(t, lastText(rs), "Stopped: the output of run_command cat creds shows a secret (aws-access-token)", "send a message")
	stoppedWith(t, h, "main", p.ID, plan.StopSecretDetected)
	tr, err := h.st.Transcript(t.Context(), sid, 100)
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range tr {
		if m.Role == core.RoleTool && m.Name == "run_command" {
			result = m.Content
		}
	}
	mustContain(t, result, "exit code: 0", "[secret hidden: aws-access-token]")
	// the key itself is in the person's file only
	if err := os.Remove(filepath.Join(ws, "creds")); err != nil {
		t.Fatal(err)
	}

	// A secret on the command line: not run, hidden.
	h.model.push(sid, calls(call("run_command", map[string]any{"argv": []string{"touch", "x-" + fakeGHPAT}})))
	rs = h.say("main", "local", "go on")
	mustContain(t, lastText(rs), "Stopped: run_command touch x-[secret hidden: github-pat] would pass a secret on its command line (github-pat in argument 2)")
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Fatalf("the command ran: %v", entries)
	}
	noSecretOnDisk(t, h, fakeAWSKey, fakeGHPAT)
}

// With plan mode off (no gate, no plan) a secret write is refused all the same.
func TestSecretWriteRefusedWithPlanModeOff(t *testing.T) {
	h := guardHarness(t, nil, func(c *engine.Config) { c.PlanMode = false })
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	h.model.push(sessionID("main"), calls(call("write_file", map[string]any{"path": "cfg.env", "content": "GITHUB_TOKEN=" + fakeGHPAT + "\n"})))
	rs := h.say("main", "local", "save my token")
	mustContain(t, lastText(rs), "Stopped: write_file on cfg.env would write a secret (github-pat on line 1)")
	if _, err := os.Stat(filepath.Join(ws, "cfg.env")); err == nil {
		t.Fatal("the secret was written")
	}
	for _, k := range h.events("main") {
		if k == core.EventStopped {
			t.Error("a stop without a plan was audited as a plan's stop")
		}
	}
	noSecretOnDisk(t, h, fakeGHPAT)
}

// A hostile model that assembles a key from pieces: the edit that completes it is refused
// by the toolbox, the file keeps its earlier content, and the turn stops as secret_detected.
func TestSecretAssembledByAnEditIsRefused(t *testing.T) {
	h := guardHarness(t, nil)
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	p := h.toExecutingAll("main", "Keys")
	sid := sessionID("main")
	h.model.push(sid, calls(
		call("write_file", map[string]any{"path": "cfg.py", "content": "aws_access_key_id = \"" + fakeAWSKey[:8] + "XXXX\"\n"}),
		call("edit_file", map[string]any{"path": "cfg.py", "old": "XXXX", "new": fakeAWSKey[8:]})))
	rs := h.say("main", "local", "configure")
	mustContain(t, lastText(rs), "Stopped: edit_file on cfg.py would write a secret (aws-access-token on line 1); nothing was written.")
	if b, _ := os.ReadFile(filepath.Join(ws, "cfg.py")); strings.Contains(string(b), fakeAWSKey) || !strings.Contains(string(b), "XXXX") {
		t.Fatalf("cfg.py is %q", b)
	}
	stoppedWith(t, h, "main", p.ID, plan.StopSecretDetected)
	noSecretOnDisk(t, h, fakeAWSKey)
}

// What an MCP server would get or give is screened like a write: a secret in any argument
// of a tool, read-only ones included, is refused before the server sees it, and a secret in
// the output of a tool that changes things is hidden; each stops the turn with
// secret_detected, and no file under the test's directory holds the secret.
func TestSecretInMCPCallsIsRefusedAndHidden(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		call       core.ToolCall
		ran        int // how often the server ran the tool
		say        string
	}{
		{"mutating argument", "write", call("ts__write", map[string]any{"text": "key " + fakeAWSKey}), 0, "would send a secret to its server"},
		{"read-only argument", "lookup", call("ts__lookup", map[string]any{"text": "who owns " + fakeGHPAT}), 0, "would send a secret to its server"},
		{"output", "issue", call("ts__issue", map[string]any{"text": "ci"}), 1, "shows a secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, counts, _ := mcpManager(t, nil, vouched)
			sc, err := secrets.New()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			h.tools, h.secrets = engine.CombineToolboxes(tools.New(tools.Config{}), m), sc
			h.open()
			sid := sessionID("main")
			h.say("main", "local", "/plan on")
			h.model.push(sid, calls(proposeTools("Credentials", "ts__write", "ts__issue")))
			h.say("main", "local", "plan it")
			h.say("main", "local", "/plan accept")
			p := h.plan(h.session("main").PlanID)
			h.model.push(sid, calls(tc.call))
			rs := h.say("main", "local", "go on")
			mustContain(t, lastText(rs), "Stopped:", tc.say)
			stoppedWith(t, h, "main", p.ID, plan.StopSecretDetected)
			if n := counts.Get(tc.tool); n != tc.ran {
				t.Fatalf("the server ran %s %d times, want %d", tc.tool, n, tc.ran)
			}
			if tc.ran > 0 {
				mustContain(t, toolContent(t, h, tc.call.ID), "issued [secret hidden: ")
			} else {
				mustContain(t, storedArgs(t, h, tc.call.ID), "[secret hidden: ")
			}
			noSecretOnDisk(t, h, fakeAWSKey, fakeGHPAT)
		})
	}
}

// storedArgs is the arguments of the model's call with id as the transcript keeps them.
func storedArgs(t *testing.T, h *harness, id string) string {
	t.Helper()
	msgs, err := h.st.Transcript(t.Context(), sessionID("main"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			if c.ID == id {
				return string(c.Args)
			}
		}
	}
	t.Fatalf("no call %s in the transcript", id)
	return ""
}

// A hostile model hides a secret where a scan of each argument's value does not look: in
// an object key, next to a key that names it, in a duplicate key the decoder drops (the
// server still gets the raw text), in arguments that are an array, or in arguments that
// are not JSON (the provider passes them through as a string, and the call is refused as
// such). No call reaches the server, each JSON one stops the turn, and neither the store
// nor any file holds the secret.
func TestSecretHiddenInMCPArgumentsIsFound(t *testing.T) {
	apiKey := "Zx8fQ2LmP9" + "vR4tWc7YbN3kHs" // a secret only next to the key naming it
	raw := func(name, args string) core.ToolCall {
		c := call(name, map[string]any{})
		c.Args = []byte(args)
		return c
	}
	for _, tc := range []struct {
		name, secret string
		call         core.ToolCall
		stops        bool
	}{
		{"key", fakeGHPAT, call("ts__lookup", map[string]any{"text": "x", fakeGHPAT: "y"}), true},
		{"nested key", fakeGHPAT, call("ts__lookup", map[string]any{"text": "x", "o": []any{map[string]any{fakeGHPAT: 1}}}), true},
		{"key naming it", apiKey, raw("ts__lookup", `{"text": "x", "api_key": "`+apiKey+`"}`), true},
		{"duplicate key", fakeGHPAT, raw("ts__lookup", `{"text": "`+fakeGHPAT+`", "text": "x"}`), true},
		{"array", fakeGHPAT, raw("ts__lookup", `["`+fakeGHPAT+`"]`), true},
		{"not JSON", fakeGHPAT, raw("ts__lookup", `"{\"text\": \"`+fakeGHPAT+`\""`), false},
		{"workspace tool, not JSON", fakeGHPAT, raw("write_file", `"{\"path\": \"cfg.env\", \"content\": \"TOKEN=`+fakeGHPAT+`"`), false},
		{"workspace tool, duplicate key", fakeGHPAT, raw("write_file", `{"path": "cfg.env", "content": "TOKEN=`+fakeGHPAT+`", "content": "x"}`), true},
		{"workspace tool, another field", fakeGHPAT, raw("write_file", `{"path": "cfg.env", "content": "x", "note": "`+fakeGHPAT+`"}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, counts, _ := mcpManager(t, nil, vouched)
			sc, err := secrets.New()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, func(c *engine.Config) { c.PlanMode = false })
			h.tools, h.secrets = engine.CombineToolboxes(tools.New(tools.Config{}), m), sc
			h.open()
			h.model.push(sessionID("main"), calls(tc.call), text("done"))
			rs := h.say("main", "local", "look it up")
			if n := counts.Get("lookup"); n != 0 {
				t.Fatalf("the server ran lookup %d times", n)
			}
			if args := storedArgs(t, h, tc.call.ID); strings.Contains(args, tc.secret) {
				t.Fatalf("the transcript keeps the call's arguments %s", args)
			}
			if tc.stops {
				verb := "would send a secret to its server"
				if !engine.IsMCPTool(tc.call.Name) {
					verb = "would write a secret"
				}
				mustContain(t, lastText(rs), "Stopped:", verb)
			} else {
				mustContain(t, toolContent(t, h, tc.call.ID), "are not valid JSON", "[secret hidden: ")
			}
			noSecretOnDisk(t, h, tc.secret)
		})
	}
}
