package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
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
		{engine.EventToolRan, "ts__lookup", 0}:    {engine.RuleReadOnly, "ok"},
		{engine.EventToolBlocked, "ts__write", 0}: {engine.RulePhase, "refused"},
		{engine.EventToolRan, "ts__write", 1}:     {engine.RuleAllowedTools, "ok"},
		{engine.EventToolRan, "ts__lookup", 1}:    {engine.RuleReadOnly, "ok"},
		{engine.EventToolRan, "ts__fail", 1}:      {engine.RuleReadOnly, "failed"},
		{engine.EventToolBlocked, "ts__wipe", 1}:  {engine.RuleAllowedTools, "refused"},
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
		case r.Kind == engine.EventToolRan && (r.DurationMS == nil || *r.DurationMS != 1500):
			t.Errorf("%v: duration %v, want 1500 ms", k, r.DurationMS)
		case r.Kind == engine.EventToolBlocked && r.DurationMS != nil:
			t.Errorf("%v: a refused call has a duration", k)
		}
	}
	if len(wants) != 0 {
		t.Errorf("rows missing: %v", wants)
	}
}

// probeBox looks at the store file while a round runs: when the MCP tool's call returns
// it notes how many durable commits were made, and when the next call of the round starts
// (the MCP call's result is not handed on before the round ends) it reads the store file
// through a connection of its own.
type probeBox struct {
	core.Toolbox
	tool      string // the MCP tool watched
	durable   *atomic.Int64
	db        *sql.DB
	afterCall int64 // durable commits when the MCP call returned
	rows      int   // the MCP call's tool_ran rows in the file when the next call began
	durableBy int64 // durable commits by then
	err       error
}

func (b *probeBox) Call(ctx context.Context, ws core.Workspace, name string, args json.RawMessage) (string, error) {
	if name == "list_files" {
		b.durableBy = b.durable.Load()
		b.err = b.db.QueryRowContext(ctx, `SELECT count(*) FROM plan_events WHERE kind = 'tool_ran' AND detail LIKE ?`,
			`%"tool":"`+b.tool+`"%`).Scan(&b.rows)
	}
	out, err := b.Toolbox.Call(ctx, ws, name, args)
	if name == b.tool {
		b.afterCall = b.durable.Load()
	}
	return out, err
}

// TestMCPAuditIsDurableBeforeTheResultMovesOn: the tool_ran row of an MCP call (a
// read-only one while planning, a mutating one the accepted plan allows) is in the store
// file, by a commit that waited for the disk, before the call's result goes on (the
// round's next call runs first, and the model sees the result only after it): a process
// that dies after the call keeps the record of what the server was asked to do.
func TestMCPAuditIsDurableBeforeTheResultMovesOn(t *testing.T) {
	for _, tool := range []string{"ts__lookup", "ts__write"} {
		t.Run(tool, func(t *testing.T) {
			h, counts := mcpHarness(t, vouched)
			var durable atomic.Int64
			db, err := sql.Open("sqlite3", "file:"+filepath.Join(h.dir, "plangate.db")+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			probe := &probeBox{Toolbox: h.tools, tool: tool, durable: &durable, db: db}
			h.tools = probe
			h.restart() // the engine with the probe; its store counts the durable commits
			h.st.OnCommit(func(d bool, _ time.Duration) {
				if d {
					durable.Add(1)
				}
			})
			sid := sessionID("main")
			round := calls(call(tool, map[string]any{"text": "x"}), call("list_files", map[string]any{"path": "."}))
			if tool == "ts__write" {
				h.say("main", "local", "/plan on")
				h.model.push(sid, calls(proposeTools("Write", "ts__write")))
				h.say("main", "local", "plan the write")
				h.model.push(sid, round, text("done"))
				h.say("main", "local", "/plan accept")
			} else {
				h.model.push(sid, round, text("done"))
				h.say("main", "local", "look around")
			}
			if n := counts.Get(strings.TrimPrefix(tool, "ts__")); n != 1 || probe.err != nil {
				t.Fatalf("%s ran %d times; reading the store file: %v", tool, n, probe.err)
			}
			if probe.rows != 1 {
				t.Fatalf("%d tool_ran rows of %s in the store file before its result moved on, want 1", probe.rows, tool)
			}
			if probe.durableBy <= probe.afterCall {
				t.Fatalf("no durable commit between the MCP call and its result moving on (%d, then %d)", probe.afterCall, probe.durableBy)
			}
		})
	}
}

// failAuditStore fails every commit that carries a tool_ran row: a store that cannot take
// the record of a call that already ran.
type failAuditStore struct{ core.Store }

func (f failAuditStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	for _, e := range ch.Events {
		if e.Kind == engine.EventToolRan {
			return core.Session{}, errors.New("disk full")
		}
	}
	return f.Store.Commit(ctx, ch)
}

// TestMCPResultWithheldWithoutItsAudit: when the row of an MCP call that ran cannot be
// stored, its result never reaches the model: the transcript in the store holds a tool
// error saying so instead.
func TestMCPResultWithheldWithoutItsAudit(t *testing.T) {
	h, counts := mcpHarness(t, vouched)
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: failAuditStore{h.st}, Model: h.model, Tools: h.tools, Out: h.out,
		Now: func() time.Time { return h.clock }}))
	look := call("ts__lookup", map[string]any{"text": "secret plans"})
	h.model.push(sessionID("main"), calls(look), text("done"))
	if err := eng.Handle(context.Background(), msg("main", "local", "look it up")); err != nil {
		t.Fatal(err)
	}
	if counts.Get("lookup") != 1 {
		t.Fatalf("lookup ran %d times", counts.Get("lookup"))
	}
	got := toolContent(t, h, look.ID)
	if strings.Contains(got, "found") || !strings.Contains(got, "ts__lookup ran, but plangate could not record it") {
		t.Fatalf("stored result %q, want the withheld notice", got)
	}
	for _, req := range h.model.requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "found secret plans") {
				t.Fatal("the model was handed the result of a call without its record")
			}
		}
	}
}
