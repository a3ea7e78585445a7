package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/plangate/plangate/core"
)

// CombineToolboxes offers the tools of several toolboxes as one (the workspace tools and
// the MCP servers' tools): a call goes to the toolbox that lists the name now. Names
// must not collide; MCP names cannot collide with workspace tools as they contain "__".
// nil toolboxes are skipped.
func CombineToolboxes(boxes ...core.Toolbox) core.Toolbox {
	var ts toolboxes
	for _, b := range boxes {
		if b != nil {
			ts = append(ts, b)
		}
	}
	return ts
}

type toolboxes []core.Toolbox

// ToolServers is what a Toolbox may implement to tell a tool that is not offered because
// its server is down (an MCP server that failed to start or died) from one that does not
// exist: the model gets the server's state instead of "unknown tool", and the chat hears
// that the server stopped.
type ToolServers interface {
	// Withdrawn reports the server of tool and its state when the server is configured
	// but not up.
	Withdrawn(tool string) (server, status string, ok bool)
}

func (ts toolboxes) Tools() []core.ToolSpec {
	var specs []core.ToolSpec
	for _, b := range ts {
		specs = append(specs, b.Tools()...)
	}
	return specs
}

// owner is the toolbox that offers name; the list is asked each time because an MCP
// server's tools come and go.
func (ts toolboxes) owner(name string) core.Toolbox {
	for _, b := range ts {
		for _, s := range b.Tools() {
			if s.Name == name {
				return b
			}
		}
	}
	return nil
}

func (ts toolboxes) Call(ctx context.Context, ws core.Workspace, name string, args json.RawMessage) (string, error) {
	b := ts.owner(name)
	if b == nil {
		return "", fmt.Errorf("no tool %q is offered now", name)
	}
	return b.Call(ctx, ws, name, args)
}

func (ts toolboxes) WritePaths(name string, args json.RawMessage) ([]string, error) {
	b := ts.owner(name)
	if b == nil {
		return nil, fmt.Errorf("no tool %q is offered now", name)
	}
	return b.WritePaths(name, args)
}

func (ts toolboxes) Withdrawn(tool string) (string, string, bool) {
	for _, b := range ts {
		if w, ok := b.(ToolServers); ok {
			if srv, st, ok := w.Withdrawn(tool); ok {
				return srv, st, true
			}
		}
	}
	return "", "", false
}
