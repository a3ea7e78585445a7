package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
)

// namedBox offers fixed tools and says which box ran a call.
type namedBox struct {
	name  string
	specs []core.ToolSpec
}

func (b namedBox) Tools() []core.ToolSpec { return b.specs }

func (b namedBox) Call(_ context.Context, _ core.Workspace, name string, _ json.RawMessage) (string, error) {
	return b.name + " ran " + name, nil
}

func (b namedBox) WritePaths(name string, _ json.RawMessage) ([]string, error) {
	return []string{b.name + "/" + name}, nil
}

func TestCombineToolboxesRoutesByName(t *testing.T) {
	ws := namedBox{"ws", []core.ToolSpec{{Name: "write_file", Kind: core.ToolMutating}}}
	srv := namedBox{"mcp", []core.ToolSpec{{Name: "fs__stat", Kind: core.ToolReadOnly}}}
	tb := engine.CombineToolboxes(ws, nil, srv)
	if got := tb.Tools(); len(got) != 2 || got[0].Name != "write_file" || got[1].Name != "fs__stat" {
		t.Fatalf("Tools() = %+v", got)
	}
	for name, want := range map[string]string{"write_file": "ws ran write_file", "fs__stat": "mcp ran fs__stat"} {
		if out, err := tb.Call(context.Background(), core.Workspace{}, name, nil); err != nil || out != want {
			t.Errorf("Call(%s) = %q, %v", name, out, err)
		}
	}
	if p, err := tb.WritePaths("fs__stat", nil); err != nil || len(p) != 1 || p[0] != "mcp/fs__stat" {
		t.Errorf("WritePaths routed to %v, %v", p, err)
	}
	if _, err := tb.Call(context.Background(), core.Workspace{}, "gone__tool", nil); err == nil || !strings.Contains(err.Error(), `no tool "gone__tool"`) {
		t.Errorf("a tool no box offers: %v", err)
	}
	if _, err := tb.WritePaths("gone__tool", nil); err == nil {
		t.Error("WritePaths of a tool no box offers succeeded")
	}
}
