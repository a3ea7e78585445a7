package core_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// tickBox is a toolbox whose calls take callTime by the harness's clock: the engine's
// clock is injected, so a call's duration is whatever the clock moved during it.
type tickBox struct {
	core.Toolbox
	h        *harness
	callTime time.Duration
}

func (b tickBox) Call(ctx context.Context, ws core.Workspace, name string, args json.RawMessage) (string, error) {
	b.h.clock = b.h.clock.Add(b.callTime)
	return b.Toolbox.Call(ctx, ws, name, args)
}

// TestMCPCallsAudited: every MCP call is a plan_events row with the gate's rule, the
// server, the tool and (for the calls that ran) the duration: read-only calls while
// planning and executing, a refused mutating call before the plan, the call the plan
// allows, and one it does not.
func TestMCPCallsAudited(t *testing.T) {
	h, counts := mcpHarness(t, vouched)
	h.tools = tickBox{Toolbox: h.tools, h: h, callTime: 1500 * time.Millisecond}
	h.restart()
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("ts__lookup", map[string]any{"text": "a"}), call("ts__write", map[string]any{"text": "early"})),
		calls(proposeTools("Write", "ts__write")))
	h.say("main", "local", "plan the write")
	h.model.push(sid, calls(call("ts__write", map[string]any{"text": "r"}), call("ts__lookup", map[string]any{"text": "b"}),
		call("ts__fail", map[string]any{})), calls(call("ts__wipe", map[string]any{})))
	h.say("main", "local", "/plan accept")
	if counts.Get("write") != 1 || counts.Get("wipe") != 0 || counts.Get("lookup") != 2 {
		t.Fatalf("server saw write %d, wipe %d, lookup %d", counts.Get("write"), counts.Get("wipe"), counts.Get("lookup"))
	}

	type key struct {
		kind    core.EventKind
		call    string
		version int
	}
	type want struct{ gate, outcome string }
	wants := map[key]want{
		{core.EventToolRan, "ts__lookup", 0}:    {core.RuleReadOnly, "ok"},
		{core.EventToolBlocked, "ts__write", 0}: {core.RulePhase, "refused"},
		{core.EventToolRan, "ts__write", 1}:     {core.RuleAllowedTools, "ok"},
		{core.EventToolRan, "ts__lookup", 1}:    {core.RuleReadOnly, "ok"},
		{core.EventToolRan, "ts__fail", 1}:      {core.RuleReadOnly, "failed"},
		{core.EventToolBlocked, "ts__wipe", 1}:  {core.RuleAllowedTools, "refused"},
	}
	rows := gateRows(t, h, "main")
	if len(rows) != len(wants) {
		t.Fatalf("%d gate rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for _, r := range rows {
		k := key{r.Kind, r.Tool, r.PlanVersion}
		w, ok := wants[k]
		if !ok {
			t.Fatalf("unexpected row %+v", r)
		}
		delete(wants, k)
		if r.Gate != w.gate || r.Outcome != w.outcome || r.Server != "ts" {
			t.Errorf("%v: gate %q outcome %q server %q, want %q %q ts", k, r.Gate, r.Outcome, r.Server, w.gate, w.outcome)
		}
		switch {
		case r.Kind == core.EventToolRan && (r.DurationMS == nil || *r.DurationMS != 1500):
			t.Errorf("%v: duration %v, want 1500 ms", k, r.DurationMS)
		case r.Kind == core.EventToolBlocked && r.DurationMS != nil:
			t.Errorf("%v: a refused call has a duration", k)
		}
	}
	if len(wants) != 0 {
		t.Errorf("rows missing: %v", wants)
	}
}

// TestMCPReadOnlyAuditCostsNoCommit: the rows of read-only MCP calls ride the round's
// flush: a round of three read-only MCP calls commits as often as a round of three
// list_files calls, which are not audited at all.
func TestMCPReadOnlyAuditCostsNoCommit(t *testing.T) {
	h, _ := mcpHarness(t, vouched)
	var commits atomic.Int64
	h.st.OnCommit(func(bool, time.Duration) { commits.Add(1) })
	round := func(chat, tool string, args map[string]any) int64 {
		t.Helper()
		h.model.push(sessionID(chat), calls(call(tool, args), call(tool, args), call(tool, args)), text("done"))
		before := commits.Load()
		h.say(chat, "local", "look around")
		return commits.Load() - before
	}
	mcpCalls := round("b", "ts__lookup", map[string]any{"text": "x"})
	files := round("a", "list_files", map[string]any{"path": "."})
	if mcpCalls != files {
		t.Fatalf("a round of read-only MCP calls took %d commits, of list_files calls %d", mcpCalls, files)
	}
	t.Logf("commits per message: %d with three read-only MCP calls, %d with three list_files calls", mcpCalls, files)
	if rows := gateRows(t, h, "b"); len(rows) != 3 {
		t.Fatalf("%d audit rows for three read-only MCP calls", len(rows))
	}
}
