package engine_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/mcp/testdata/testserver"
	"github.com/plangate/plangate/core/tools"
)

// The engine finds withdrawn MCP tools through this optional interface of the toolbox.
var _ engine.ToolServers = (*mcp.Manager)(nil)

// mcpHarness is a harness whose toolbox is the workspace tools plus the in-memory MCP
// test server "ts"; counts says which tools the server really ran. The server's crash
// tool cuts the connection, as a dying process would.
func mcpHarness(t *testing.T, cfg ...mcp.ServerConfig) (*harness, *testserver.Counts) {
	t.Helper()
	h, counts, _ := mcpServerHarness(t, nil, cfg...)
	return h, counts
}

// mcpServerHarness is mcpHarness that also returns the server, with obs (may be nil) as
// the manager's Observer.
func mcpServerHarness(t *testing.T, obs mcp.Observer, cfg ...mcp.ServerConfig) (*harness, *testserver.Counts, *sdk.Server) {
	t.Helper()
	m, counts, srv := mcpManager(t, obs, cfg...)
	h := newHarness(t)
	h.tools = engine.CombineToolboxes(tools.New(tools.Config{}), m)
	h.open()
	return h, counts, srv
}

// mcpManager is the started manager of mcpServerHarness, its counts and its server.
func mcpManager(t *testing.T, obs mcp.Observer, cfg ...mcp.ServerConfig) (*mcp.Manager, *testserver.Counts, *sdk.Server) {
	t.Helper()
	counts := &testserver.Counts{}
	var mu sync.Mutex
	var conn sdk.Connection
	srv := testserver.New(counts, func() {
		mu.Lock()
		defer mu.Unlock()
		_ = conn.Close()
	})
	transport := func(ctx context.Context, _ mcp.ServerConfig) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return connectFunc(func(ctx context.Context) (sdk.Connection, error) {
			c, err := ct.Connect(ctx)
			mu.Lock()
			conn = c
			mu.Unlock()
			return c, err
		}), nil
	}
	sc := mcp.ServerConfig{}
	if len(cfg) > 0 {
		sc = cfg[0]
	}
	sc.Name, sc.Command = "ts", []string{"in-memory"}
	never := func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }
	m, err := mcp.New(mcp.Config{sc}, mcp.Options{Transport: transport, Sleep: never, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, counts, srv
}

// vouched is the test server as an operator who vouches for its reading tools configures
// it: only these are read-only; every other tool is mutating whatever its hints say.
var vouched = mcp.ServerConfig{ReadOnlyTools: []string{"lookup", "fail", "crash", "late"}}

type connectFunc func(ctx context.Context) (sdk.Connection, error)

func (f connectFunc) Connect(ctx context.Context) (sdk.Connection, error) { return f(ctx) }

// toolContent is the tool result recorded for the call with id.
func toolContent(t *testing.T, h *harness, id string) string {
	t.Helper()
	msgs, err := h.st.Transcript(context.Background(), sessionID("main"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		if msg.Role == core.RoleTool && msg.ToolCallID == id {
			return msg.Content
		}
	}
	t.Fatalf("no result recorded for %s", id)
	return ""
}

// TestMCPMutatingToolRefusedWhilePlanning: a hostile model calls the mutating MCP tool
// while planning; it is refused with the same error as write_file and the server never
// sees the call, while the read-only MCP tool runs.
func TestMCPMutatingToolRefusedWhilePlanning(t *testing.T) {
	h, counts := mcpHarness(t, vouched)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	mut := call("ts__write", map[string]any{"text": "record"})
	wipe := call("ts__wipe", map[string]any{})
	write := call("write_file", map[string]any{"path": "x.md", "content": "x"})
	look := call("ts__lookup", map[string]any{"text": "cats"})
	h.model.push(sid, calls(mut, wipe, write, look), calls(propose("Write the record", "Write it")))
	rs := h.say("main", "local", "write the record now")
	mustContain(t, joinTexts(rs), "Blocked 3 calls: nothing may change before a plan is accepted", "- ts__write\n", "- ts__wipe\n")

	for _, c := range []core.ToolCall{mut, wipe} {
		got := toolContent(t, h, c.ID)
		want := strings.ReplaceAll(toolContent(t, h, write.ID), "write_file", c.Name)
		if got != want {
			t.Errorf("%s refused with\n%s\nwant the write_file refusal\n%s", c.Name, got, want)
		}
	}
	mustContain(t, toolContent(t, h, write.ID), "refused in phase planning")
	if n, w := counts.Get("write"), counts.Get("wipe"); n != 0 || w != 0 {
		t.Fatalf("the server saw %d write and %d wipe calls while planning", n, w)
	}
	blocked := 0
	for _, k := range h.events("main") {
		if k == engine.EventToolBlocked {
			blocked++
		}
	}
	if blocked != 3 {
		t.Errorf("%d tool_blocked audit rows, want 3 (ts__write, ts__wipe, write_file)", blocked)
	}
	if got := toolContent(t, h, look.ID); got != "found cats" || counts.Get("lookup") != 1 {
		t.Fatalf("read-only MCP tool while planning: %q (%d calls)", got, counts.Get("lookup"))
	}
}

// TestMCPReadOnlyHintIsNotTrusted: a hostile server's tool claims readOnlyHint: true and
// writes a file outside the workspace. Without the operator's word it is mutating: while
// planning it is refused, the server never runs it and the file is absent on disk. Once
// the operator lists it in read_only_tools it runs while planning (and the file appears:
// the check above can see a write).
func TestMCPReadOnlyHintIsNotTrusted(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  mcp.ServerConfig
		runs bool
	}{
		{"hint only", mcp.ServerConfig{}, false},
		{"trusted by the operator", mcp.ServerConfig{ReadOnlyTools: []string{"drop"}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, counts := mcpHarness(t, c.cfg)
			target := filepath.Join(t.TempDir(), "outside-the-workspace.txt")
			sid := sessionID("main")
			h.say("main", "local", "/plan on")
			drop := call("ts__drop", map[string]any{"text": target})
			h.model.push(sid, calls(drop), text("looked around"))
			h.say("main", "local", "look around")
			_, err := os.Stat(target)
			if c.runs {
				if err != nil || counts.Get("drop") != 1 {
					t.Fatalf("the vouched-for tool did not run: %v (%d calls)", err, counts.Get("drop"))
				}
				return
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the file the tool writes is on disk (stat: %v): a readOnlyHint ran it while planning", err)
			}
			if n := counts.Get("drop"); n != 0 {
				t.Fatalf("the server ran ts__drop %d times while planning", n)
			}
			mustContain(t, toolContent(t, h, drop.ID), "ts__drop is refused in phase planning")
			rows := gateRows(t, h, "main")
			if len(rows) != 1 || rows[0].Kind != engine.EventToolBlocked || rows[0].Tool != "ts__drop" || rows[0].Gate != engine.RulePhase {
				t.Fatalf("audit rows %+v, want one tool_blocked row for ts__drop by the phase rule", rows)
			}
			for _, s := range h.model.requests()[0].Tools {
				if s.Name == "ts__drop" && s.Kind != core.ToolMutating {
					t.Fatalf("ts__drop offered as %s on its own hint", s.Kind)
				}
			}
		})
	}
}

// proposeTools proposes a plan whose scope names allowed tools.
func proposeTools(title string, allowed ...string) core.ToolCall {
	return call("exit_plan_mode", map[string]any{
		"title": title, "summary": "Summary of " + title, "plan": []stepArg{{Step: "Call the tool"}},
		"scope": map[string]any{"allowed_tools": allowed},
	})
}

// TestMCPMutatingToolNeedsAllowedTools: after accept, a mutating MCP tool runs only when
// the accepted plan's scope.allowed_tools names it.
func TestMCPMutatingToolNeedsAllowedTools(t *testing.T) {
	h, counts := mcpHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeTools("Write", "ts__write")))
	h.say("main", "local", "plan the write")
	wipe := call("ts__wipe", map[string]any{})
	h.model.push(sid, calls(wipe))
	rs := h.say("main", "local", "/plan accept")
	if counts.Get("wipe") != 0 {
		t.Fatal("ts__wipe ran although the accepted plan does not name it")
	}
	mustContain(t, joinTexts(rs), "Stopped: ts__wipe refused: it is not in the accepted plan's scope.allowed_tools")
	mustContain(t, toolContent(t, h, wipe.ID), "error: ts__wipe refused", "allowed_tools")

	// The plan still runs, and the tool it names works.
	mut := call("ts__write", map[string]any{"text": "r"})
	h.model.push(sid, calls(mut))
	h.say("main", "local", "go on with the plan")
	if got := toolContent(t, h, mut.ID); got != "wrote r" || counts.Get("write") != 1 {
		t.Fatalf("ts__write in allowed_tools: %q (%d calls)", got, counts.Get("write"))
	}
}

// TestMCPToolInAllowedToolsRuns: the tool the plan names runs after accept.
func TestMCPToolInAllowedToolsRuns(t *testing.T) {
	h, counts := mcpHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeTools("Write", "ts__write")))
	h.say("main", "local", "plan the write")
	mut := call("ts__write", map[string]any{"text": "r"})
	h.model.push(sid, calls(mut))
	h.say("main", "local", "/plan accept")
	if got := toolContent(t, h, mut.ID); got != "wrote r" || counts.Get("write") != 1 {
		t.Fatalf("ts__write in allowed_tools: %q (%d calls)", got, counts.Get("write"))
	}
	if !slices.Contains(h.events("main"), engine.EventToolRan) {
		t.Error("the MCP call that ran has no tool_ran audit row")
	}
	if err := h.eng.Wait(context.Background()); err != nil { // plan files are written in the background
		t.Fatal(err)
	}
	data, err := os.ReadFile(h.plan(h.session("main").PlanID).File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(data), "Allowed tools:\n\n- `ts__write`\n")
}

// TestMCPDeniedToolIsNotOfferedToTheModel: a tool whose hint claims read-only but that
// the operator denies is not in the model's tool list, and calling it anyway is refused.
func TestMCPDeniedToolIsNotOfferedToTheModel(t *testing.T) {
	h, counts := mcpHarness(t, mcp.ServerConfig{DenyTools: []string{"sneaky"}})
	sneaky := call("ts__sneaky", map[string]any{})
	h.model.push(sessionID("main"), calls(sneaky))
	h.say("main", "local", "/plan on")
	h.say("main", "local", "look around")
	reqs := h.model.requests()
	for _, s := range reqs[len(reqs)-1].Tools {
		if s.Name == "ts__sneaky" {
			t.Fatal("a denied tool was offered to the model")
		}
	}
	mustContain(t, toolContent(t, h, sneaky.ID), `unknown tool "ts__sneaky"`)
	if counts.Get("sneaky") != 0 {
		t.Fatal("the server ran a denied tool")
	}
}

// TestMCPServerCrashMidTurn: the server dies during a call; the model gets a tool error,
// the turn goes on, and the next model request no longer offers the server's tools.
func TestMCPServerCrashMidTurn(t *testing.T) {
	h, _ := mcpHarness(t, vouched)
	sid := sessionID("main")
	crash := call("ts__crash", map[string]any{})
	again := call("ts__lookup", map[string]any{"text": "x"}) // from memory: it is not offered now
	h.model.push(sid, calls(crash), calls(again), text("the server is gone; carrying on"))
	rs := h.say("main", "local", "use the server")
	mustContain(t, toolContent(t, h, crash.ID), "error: MCP server ts failed during ts__crash")
	mustContain(t, toolContent(t, h, again.ID), "error: MCP server ts is not available (down (", "its tools are withdrawn, go on without them")
	got := joinTexts(rs)
	const notice = "MCP server ts stopped; its tools are withdrawn, restarting."
	mustContain(t, got, notice+"\n", "the server is gone; carrying on")
	if strings.Count(got, notice) != 1 || strings.Index(got, notice) > strings.Index(got, "carrying on") {
		t.Fatalf("want one notice before the agent's answer:\n%s", got)
	}

	reqs := h.model.requests()
	for _, s := range reqs[len(reqs)-1].Tools {
		if strings.HasPrefix(s.Name, "ts__") {
			t.Fatalf("the dead server's tool %s is still offered", s.Name)
		}
	}
}

// TestMCPDestructiveToolMarkedInPlanFile: the plan file marks a destructive tool of
// scope.allowed_tools, before and after the decision (the file is rewritten on accept).
func TestMCPDestructiveToolMarkedInPlanFile(t *testing.T) {
	h, _ := mcpHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeTools("Wipe and write", "ts__wipe", "ts__write")))
	h.say("main", "local", "plan it")
	read := func() string {
		t.Helper()
		if err := h.eng.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(h.plan(h.session("main").PlanID).File)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const want = "Allowed tools:\n\n- `ts__wipe` (destructive)\n- `ts__write`\n"
	mustContain(t, read(), want, "status: pending")
	h.model.push(sid, text("done"))
	h.say("main", "local", "/plan accept")
	mustContain(t, read(), want, "status: accepted")
}

// TestMCPServerDownNoticeIsAnOutboxRow: the notice of a crashed server is committed to
// the outbox like every reply (a platform that is down gets it on the next start), and
// the log says which session's call failed.
func TestMCPServerDownNoticeIsAnOutboxRow(t *testing.T) {
	h, _ := mcpHarness(t, vouched)
	p := h.process(failSender{}, nil, h.tools)
	sid := sessionID("a")
	p.model.push(sid, calls(call("ts__crash", map[string]any{})), text("carrying on"))
	_ = p.eng.Handle(context.Background(), core.Message{ID: "ev-1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "use the server", Time: h.clock})
	var texts []string
	for _, r := range unsent(t, h.st) {
		texts = append(texts, r.Reply.Text)
	}
	if !slices.Equal(texts, []string{"MCP server ts stopped; its tools are withdrawn, restarting.", "carrying on"}) {
		t.Fatalf("outbox %q, want the notice, then the answer", texts)
	}
	mustContain(t, p.log.String(), "tool server stopped during a call", "server=ts")
}

// statusCh hears the MCP servers' status lines.
type statusCh chan string

func (statusCh) ToolCalled(mcp.CallRecord) {}
func (c statusCh) ServerStatus(server, line string) {
	select {
	case c <- server + ": " + line:
	default: // a test that stopped listening must not block the server
	}
}

// TestMCPListChangedOffersTheNewTool: a tool the server adds while running
// (notifications/tools/list_changed) is offered in the next model request and runs.
func TestMCPListChangedOffersTheNewTool(t *testing.T) {
	st := make(statusCh, 16)
	h, _, srv := mcpServerHarness(t, st, vouched)
	testserver.AddLate(srv)
	for up := false; !up; {
		select {
		case line := <-st:
			up = line == "ts: up, 12 tools"
		case <-time.After(20 * time.Second): // a failure, not a timing assertion
			t.Fatal("the server's new tool list never arrived")
		}
	}
	late := call("ts__late", map[string]any{})
	h.model.push(sessionID("main"), calls(late), text("done"))
	h.say("main", "local", "use the new tool")
	offered := false
	for _, s := range h.model.requests()[0].Tools {
		offered = offered || s.Name == "ts__late"
	}
	if !offered {
		t.Fatal("the tool added by list_changed is not offered")
	}
	if got := toolContent(t, h, late.ID); got != "late ran" {
		t.Fatalf("ts__late: %q", got)
	}
}

// TestMCPServerDownToldToTheSessionExecutingWithIt: a server crashes in another session's
// call; the session whose accepted plan names its tools hears of it when its next turn
// starts, once, and the agent gets the server's state when it calls the tool anyway.
func TestMCPServerDownToldToTheSessionExecutingWithIt(t *testing.T) {
	h, counts := mcpHarness(t, vouched)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeTools("Write", "ts__write")))
	h.say("main", "local", "plan the write")
	h.model.push(sid, text("waiting for your go"))
	h.say("main", "local", "/plan accept")

	h.model.push(sessionID("other"), calls(call("ts__crash", map[string]any{})), text("gone"))
	h.say("other", "local", "crash it")

	mut := call("ts__write", map[string]any{"text": "r"})
	h.model.push(sid, calls(mut), text("could not write"))
	got := joinTexts(h.say("main", "local", "go on"))
	const notice = "MCP server ts stopped; its tools are withdrawn, restarting."
	if strings.Count(got, notice) != 1 || !strings.HasPrefix(got, notice) {
		t.Fatalf("want the notice once, first:\n%s", got)
	}
	mustContain(t, toolContent(t, h, mut.ID), "error: MCP server ts is not available (down (")
	if counts.Get("write") != 0 {
		t.Fatal("the write reached a server that is down")
	}
}
