package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/metrics"
)

// mcpScript is a hostile scripted agent: it calls the mutating MCP tool before any plan
// (and a tool the operator denies although its hint claims read-only),
// proposes a plan whose scope does not name it and calls it anyway, then, sent back,
// proposes one that names it (and a destructive tool), runs it and crashes the server.
const mcpScript = `turns:
  - match: '^write the record'
    tool_calls:
      - {name: enter_plan_mode, args: {reason: "Look first."}}
  - match: '^write the record'
    tool_calls:
      - {name: ts__lookup, args: {text: records}}
      - {name: ts__write, args: {text: early}}
      - {name: ts__sneaky, args: {}}
  - match: '^write the record'
    tool_calls:
      - name: exit_plan_mode
        args: {title: Record, summary: Write the record., plan: [{step: Write the record}], scope: {allowed_tools: [ts__lookup]}}
  - match: '\[PLAN_DECISION\]: approved[\s\S]*"Record"'
    tool_calls:
      - {name: ts__write, args: {text: v1}}
  - match: '\[PLAN_DECISION\]: rejected'
    tool_calls:
      - name: exit_plan_mode
        args: {title: Record and wipe, summary: Write the record and wipe the rest., plan: [{step: Write the record}], scope: {allowed_tools: [ts__write, ts__wipe]}}
  - match: '\[PLAN_DECISION\]: approved[\s\S]*"Record and wipe"'
    tool_calls:
      - {name: ts__write, args: {text: v2}}
  - match: '\[PLAN_DECISION\]: approved[\s\S]*"Record and wipe"'
    tool_calls:
      - {name: ts__crash, args: {}}
  - match: '\[PLAN_DECISION\]: approved[\s\S]*"Record and wipe"'
    text: The server is gone; the record is written.
`

// buildMCPServer builds the stdio test server of core/mcp.
func buildMCPServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpserver")
	out, err := exec.Command("go", "build", "-o", bin, "../../core/mcp/testdata/mcpserver").CombinedOutput()
	if err != nil {
		t.Fatalf("building the MCP test server: %v\n%s", err, out)
	}
	return bin
}

// TestMCPEndToEnd runs the gateway as serve wires it, with the stdio MCP test server from
// tools.mcp and one Metrics: the server sees only the call the accepted plan allows, the
// chat hears of every refusal and of the crash, the plan file marks the destructive tool,
// and the audit rows and the counters say what happened.
func TestMCPEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tmp := t.TempDir()
	calls := filepath.Join(tmp, "calls")
	script := filepath.Join(tmp, "script.yaml")
	if err := os.WriteFile(script, []byte(mcpScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgText := defaultTestConfig + "tools:\n  mcp:\n    - {name: ts, command: [\"" + buildMCPServer(t) + "\"], env: {MCPSERVER_CALLS: \"" + calls + "\"}, read_only_tools: [lookup, crash], deny_tools: [sneaky]}\n"
	cfgPath := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e := procEnv{stderr: &stderr, now: func() time.Time { return fixedNow }, getenv: func(k string) string {
		return map[string]string{"SCRIPT": script, "SEED": demoSeed(t)}[k]
	}}
	cfg, err := loadConfig(cfgPath, e)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := metrics.New()
	fake := channeltest.NewFake("fake")
	hub := channels.NewHub(nil, fake)
	g, err := startGateway(ctx, cfg, e, newLogger(cfg, &stderr), st, hub, []string{"fake"}, m)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = g.shutdown(5*time.Second, nil)
		}
	}()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go func() { _ = hub.Run(runCtx, workHandler{eng: g.eng, ctx: ctx}) }()

	alice := core.Person{ID: "u1", Name: "alice"}
	addr := core.Address{Channel: "fake", Chat: "c1"}
	for i, text := range []string{"write the record", "/plan accept", "/plan revise the plan must name ts__write", "/plan accept"} {
		if err := fake.Deliver(ctx, core.Message{ID: "e" + string(rune('1'+i)), Address: addr, Sender: alice, Text: text}); err != nil {
			t.Fatalf("delivering %q: %v", text, err)
		}
	}
	if err := g.eng.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	// The server saw the read-only call and only the write the accepted plan allows.
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); !slices.Equal(got, []string{"lookup", "write", "crash"}) {
		t.Fatalf("the server saw %v, want [lookup write crash]", got)
	}
	var chat strings.Builder
	for _, r := range fake.Replies() {
		chat.WriteString(r.Text + "\n")
	}
	for _, want := range []string{
		"Blocked ts__write: nothing may change before a plan is accepted",
		"Stopped: ts__write refused: it is not in the accepted plan's scope.allowed_tools",
		"MCP server ts stopped; its tools are withdrawn, restarting.",
		"The server is gone; the record is written.",
	} {
		if !strings.Contains(chat.String(), want) {
			t.Errorf("chat lacks %q:\n%s", want, chat.String())
		}
	}

	sid := addr.SessionID()
	plans, err := st.Plans(ctx, sid)
	if err != nil || len(plans) != 2 {
		t.Fatalf("plans %d, %v", len(plans), err)
	}
	v2 := plans[0]
	if v2.Version != 2 {
		v2 = plans[1]
	}
	file, err := os.ReadFile(v2.File)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), "Allowed tools:\n\n- `ts__write`\n- `ts__wipe` (destructive)\n") {
		t.Errorf("plan v2 file does not mark ts__wipe destructive:\n%s", file)
	}

	// The audit rows in plan_events, one per MCP call.
	evs, err := st.Events(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, ev := range evs {
		if ev.Kind != engine.EventToolBlocked && ev.Kind != engine.EventToolRan {
			continue
		}
		var a engine.ToolAudit
		if err := json.Unmarshal([]byte(ev.Detail), &a); err != nil {
			t.Fatal(err)
		}
		if a.Server != "ts" || (ev.Kind == engine.EventToolRan) != (a.DurationMS != nil) {
			t.Errorf("row %s %+v: server or duration missing", ev.Kind, a)
		}
		rows = append(rows, strings.Join([]string{string(ev.Kind), a.Tool, a.Gate, a.Outcome}, " "))
	}
	slices.Sort(rows)
	want := []string{
		"tool_blocked ts__write allowed_tools refused",
		"tool_blocked ts__write phase refused",
		"tool_ran ts__crash read_only failed",
		"tool_ran ts__lookup read_only ok",
		"tool_ran ts__write allowed_tools ok",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("audit rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// The log says which session's call the server failed (read once the servers stopped:
	// their supervisor logs too).
	stopped = true
	if err := g.shutdown(5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if log := stderr.String(); !strings.Contains(log, `msg="tool server stopped during a call" session=fake::c1 server=ts`) {
		t.Errorf("log lacks the server's stop:\n%s", log)
	}

	for _, c := range []struct {
		tool, outcome string
		want          float64
	}{
		{"ts__write", "blocked", 2}, {"ts__write", "ran", 1}, {"ts__lookup", "ran", 1}, {"ts__crash", "failed", 1},
	} {
		if got := sample(t, m, "plangate_tool_calls_total", "tool", c.tool, "outcome", c.outcome); got != c.want {
			t.Errorf("plangate_tool_calls_total{tool=%s,outcome=%s} = %v, want %v", c.tool, c.outcome, got, c.want)
		}
	}
}
