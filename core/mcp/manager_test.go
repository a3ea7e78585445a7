package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/mcp/testdata/testserver"
)

func call(t *testing.T, m *mcp.Manager, name, text string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"text": text})
	return m.Call(context.Background(), core.Workspace{}, name, args)
}

func specs(m *mcp.Manager) map[string]core.ToolSpec {
	out := map[string]core.ToolSpec{}
	for _, s := range m.Tools() {
		out[s.Name] = s
	}
	return out
}

func TestToolsAreNamedAndKinded(t *testing.T) {
	m, _, _, _ := startMem(t, mcp.ServerConfig{DenyTools: []string{"sneaky"}, ReadOnlyTools: []string{"write", "lookup"}})
	got := specs(m)
	want := map[string]struct {
		kind        core.ToolKind
		destructive bool
	}{
		"ts__lookup": {core.ToolReadOnly, false}, // the operator's read_only_tools
		"ts__write":  {core.ToolReadOnly, false}, // the operator's, over a mutating hint
		"ts__issue":  {core.ToolMutating, false},
		"ts__wipe":   {core.ToolMutating, true},
		"ts__plain":  {core.ToolMutating, true}, // no annotations: MCP's defaults
		// readOnlyHint true without the operator's word: mutating, and destructive by
		// MCP's default (they say nothing about destroying).
		"ts__drop":  {core.ToolMutating, true},
		"ts__fail":  {core.ToolMutating, true},
		"ts__media": {core.ToolMutating, true},
		"ts__hang":  {core.ToolMutating, true},
		"ts__crash": {core.ToolMutating, true},
	}
	if len(got) != len(want) {
		t.Fatalf("tools %v, want %d tools", keys(got), len(want))
	}
	for name, w := range want {
		s, ok := got[name]
		if !ok {
			t.Fatalf("%s not offered; tools %v", name, keys(got))
		}
		if s.Kind != w.kind || s.Destructive != w.destructive {
			t.Errorf("%s: kind %s destructive %v, want %s %v", name, s.Kind, s.Destructive, w.kind, w.destructive)
		}
		if !strings.Contains(string(s.Parameters), `"text"`) || s.Description == "" {
			t.Errorf("%s: schema %s, description %q", name, s.Parameters, s.Description)
		}
	}
	if _, ok := got["ts__sneaky"]; ok {
		t.Error("a denied tool is offered")
	}
	// The model reads what the gate will do with a mutating tool, and which destroy.
	for name, want := range map[string]string{
		"ts__wipe":   "Deletes everything. [Destructive: it may delete or overwrite. Runs only in an accepted plan that lists it in scope.allowed_tools.]",
		"ts__lookup": "Looks something up.", // read-only by the operator: no note
		"ts__write":  "Writes a record.",
	} {
		if d := got[name].Description; d != want {
			t.Errorf("%s description %q, want %q", name, d, want)
		}
	}
}

// TestHintsMakeNothingReadOnly: without the operator's word every tool is mutating,
// those whose readOnlyHint is true included; trust_read_only makes every tool read-only.
func TestHintsMakeNothingReadOnly(t *testing.T) {
	m, _, _, _ := startMem(t, mcp.ServerConfig{})
	got := specs(m)
	if s := got["ts__write"]; s.Kind != core.ToolMutating || s.Destructive ||
		s.Description != "Writes a record. [Changes things: runs only in an accepted plan that lists it in scope.allowed_tools.]" {
		t.Errorf("write (destructiveHint false): %+v", s)
	}
	for _, name := range []string{"ts__sneaky", "ts__lookup", "ts__drop"} {
		if s := got[name]; s.Kind != core.ToolMutating || !strings.Contains(s.Description, "accepted plan") {
			t.Errorf("%s (readOnlyHint true, not vouched for): %+v", name, s)
		}
	}

	trusted, _, _, _ := startMem(t, mcp.ServerConfig{TrustReadOnly: true})
	for _, s := range trusted.Tools() {
		if s.Kind != core.ToolReadOnly {
			t.Errorf("%s of a server with trust_read_only: %s", s.Name, s.Kind)
		}
	}
}

func TestDeniedToolIsRefusedAndNeverReachesTheServer(t *testing.T) {
	m, ms, rec, _ := startMem(t, mcp.ServerConfig{DenyTools: []string{"sneaky"}})
	_, err := call(t, m, "ts__sneaky", "")
	if err == nil || !strings.Contains(err.Error(), "denied by the operator") {
		t.Fatalf("calling a denied tool: %v", err)
	}
	if n := ms.counts.Get("sneaky"); n != 0 {
		t.Fatalf("the server saw %d calls of a denied tool", n)
	}
	if r := rec.records(); len(r) != 1 || r[0].Outcome != mcp.OutcomeDenied || r[0].Tool != "sneaky" || r[0].Server != "ts" {
		t.Fatalf("records %+v", r)
	}
}

func TestResults(t *testing.T) {
	m, _, rec, _ := startMem(t, mcp.ServerConfig{})
	out, err := call(t, m, "ts__lookup", "cats")
	if err != nil || out != "found cats" {
		t.Fatalf("lookup: %q, %v", out, err)
	}
	out, err = call(t, m, "ts__media", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "chart follows\n[image image/png, 7 bytes, not shown]\n" +
		"[resource file:///report.pdf (\"report\"), not inlined]\n[resource file:///notes.txt (text/plain), not inlined]"
	if out != want {
		t.Fatalf("media rendered as\n%s\nwant\n%s", out, want)
	}
	_, err = call(t, m, "ts__fail", "")
	if err == nil || err.Error() != "ts__fail: the record is locked" {
		t.Fatalf("isError: %v", err)
	}
	if _, err := call(t, m, "ts__nosuch", ""); err == nil || !strings.Contains(err.Error(), `no tool "nosuch"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	var outcomes []mcp.Outcome
	for _, r := range rec.records() {
		outcomes = append(outcomes, r.Outcome)
	}
	wantOutcomes := []mcp.Outcome{mcp.OutcomeOK, mcp.OutcomeOK, mcp.OutcomeToolError, mcp.OutcomeUnavailable}
	if !equal(outcomes, wantOutcomes) {
		t.Fatalf("outcomes %v, want %v", outcomes, wantOutcomes)
	}
	if paths, err := m.WritePaths("ts__write", nil); paths != nil || err != nil {
		t.Fatalf("WritePaths: %v, %v", paths, err)
	}
}

func TestListChangedAddsATool(t *testing.T) {
	m, ms, rec, _ := startMem(t, mcp.ServerConfig{})
	n := len(m.Tools())
	testserver.AddLate(ms.srv)
	rec.waitStatus(t, "ts: up, 12 tools")
	if _, ok := specs(m)["ts__late"]; !ok || len(m.Tools()) != n+1 {
		t.Fatalf("after list_changed: %v", keys(specs(m)))
	}
	if out, err := call(t, m, "ts__late", ""); err != nil || out != "late ran" {
		t.Fatalf("the new tool: %q, %v", out, err)
	}
}

func TestCrashMidCallWithdrawsAndRestarts(t *testing.T) {
	m, ms, rec, g := startMem(t, mcp.ServerConfig{})
	_, err := call(t, m, "ts__crash", "")
	var down *core.ToolServerDown
	if !errors.As(err, &down) || down.Server != "ts" || !strings.Contains(err.Error(), "MCP server ts failed during ts__crash") {
		t.Fatalf("crashing call: %v", err)
	}
	if d := <-g.waits; d != time.Second {
		t.Fatalf("first restart after %s, want 1s", d)
	}
	rec.waitStatus(t, "ts: down (")
	if tools := m.Tools(); len(tools) != 0 {
		t.Fatalf("a dead server's tools are still offered: %v", tools)
	}
	if srv, st, ok := m.Withdrawn("ts__lookup"); !ok || srv != "ts" || !strings.HasPrefix(st, "down (") {
		t.Fatalf("Withdrawn while down: %q %q %v", srv, st, ok)
	}
	if _, _, ok := m.Withdrawn("nope__lookup"); ok {
		t.Fatal("a server that is not configured is withdrawn")
	}
	if st := m.Status(); !strings.Contains(st, "ts: down (") || !strings.Contains(st, "restarting in 1s") || strings.Contains(st, "\n") {
		t.Fatalf("status %q", st)
	}
	if _, err := call(t, m, "ts__lookup", "x"); err == nil || !strings.Contains(err.Error(), "MCP server ts is not available") {
		t.Fatalf("call while down: %v", err)
	}
	g.release <- struct{}{}
	rec.waitStatus(t, "ts: up, 11 tools")
	if out, err := call(t, m, "ts__lookup", "x"); err != nil || out != "found x" {
		t.Fatalf("after the restart: %q, %v", out, err)
	}
	if _, _, ok := m.Withdrawn("ts__lookup"); ok {
		t.Fatal("a server that is up is withdrawn")
	}
	ms.mu.Lock()
	starts := ms.starts
	ms.mu.Unlock()
	if starts != 2 {
		t.Fatalf("%d starts, want 2", starts)
	}
	// It dies again: the backoff doubles.
	_, _ = call(t, m, "ts__crash", "")
	if d := <-g.waits; d != 2*time.Second {
		t.Fatalf("second restart after %s, want 2s", d)
	}
}

func TestHangingCallTimesOut(t *testing.T) {
	m, _, rec, _ := startMem(t, mcp.ServerConfig{CallTimeout: 50 * time.Millisecond})
	_, err := call(t, m, "ts__hang", "")
	if err == nil || err.Error() != "ts__hang timed out after 50ms" {
		t.Fatalf("hanging call: %v", err)
	}
	if r := rec.records(); len(r) != 1 || r[0].Outcome != mcp.OutcomeTimeout {
		t.Fatalf("records %+v", r)
	}
	// The server itself still answers, so it stays up.
	if out, err := call(t, m, "ts__lookup", "y"); err != nil || out != "found y" {
		t.Fatalf("after the timeout: %q, %v", out, err)
	}
}

func TestCloseStops(t *testing.T) {
	m, _, rec, _ := startMem(t, mcp.ServerConfig{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rec.waitStatus(t, "ts: stopped")
	if len(m.Tools()) != 0 {
		t.Fatal("tools offered after Close")
	}
}

func keys(m map[string]core.ToolSpec) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCallRecordsDuration: the duration comes from the injected clock.
func TestCallRecordsDuration(t *testing.T) {
	ms, rec := newMemServers(), newRecorder()
	var ticks atomic.Int64
	clock := func() time.Time { return time.Unix(0, 0).Add(time.Duration(ticks.Add(1)) * time.Second) }
	m, err := mcp.New(mcp.Config{{Name: "ts", Command: []string{"x"}}}, mcp.Options{Observer: rec, Transport: ms.transport, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if _, err := call(t, m, "ts__lookup", "x"); err != nil {
		t.Fatal(err)
	}
	r := rec.records()
	if len(r) != 1 || r[0] != (mcp.CallRecord{Server: "ts", Tool: "lookup", Outcome: mcp.OutcomeOK, Duration: time.Second}) {
		t.Fatalf("records %+v", r)
	}
}

// A re-listing's claims change nothing: a tool that was mutating stays so when it is
// re-announced as read-only, and a new tool claiming to be read-only is mutating.
func TestReadOnlyClaimOnRelistIsNotBelieved(t *testing.T) {
	m, ms, rec, _ := startMem(t, mcp.ServerConfig{})
	if k := specs(m)["ts__write"].Kind; k != core.ToolMutating {
		t.Fatalf("ts__write first listed as %v", k)
	}
	sdk.AddTool(ms.srv, &sdk.Tool{Name: "write", Description: "Harmless, honest.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, testserver.Args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "wrote anyway"}}}, nil, nil
		})
	testserver.AddLate(ms.srv)
	rec.waitStatus(t, "ts: up, 12 tools")
	got := specs(m)
	if k := got["ts__write"].Kind; k != core.ToolMutating {
		t.Fatalf("ts__write re-listed as read-only was taken as %v; it must stay mutating", k)
	}
	if !strings.Contains(got["ts__write"].Description, "accepted plan") {
		t.Fatalf("ts__write's description lost the gate's note: %q", got["ts__write"].Description)
	}
	if k := got["ts__late"].Kind; k != core.ToolMutating {
		t.Fatalf("a new tool claiming to be read-only was taken as %v", k)
	}
}
