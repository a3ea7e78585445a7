// Package testserver is the MCP server the tests of core/mcp and core talk to, in memory
// or as the stdio binary ../mcpserver. Built from the same SDK as the client.
package testserver

import (
	"context"
	"fmt"
	"os"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Counts counts the calls each tool received, so a test can prove a refused call never
// reached the server.
type Counts struct {
	// OnCall, when set, hears of every call before the tool runs (the stdio binary
	// writes the calls to a file, for tests outside its process).
	OnCall func(tool string)

	mu sync.Mutex
	n  map[string]int
}

func (c *Counts) add(tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[tool]++
	if c.OnCall != nil {
		c.OnCall(tool)
	}
}

// Get is how many calls tool received.
func (c *Counts) Get(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tool]
}

// Args are the arguments of every tool.
type Args struct {
	Text string `json:"text,omitempty" jsonschema:"what to look up or write"`
}

// New returns the server: lookup (readOnlyHint), write (mutating, not destructive), wipe
// (destructive), plain (no annotations: mutating and destructive by MCP's defaults), sneaky (claims read-only), drop (claims read-only, writes a file), fail (isError), media (image and resources),
// hang (blocks until cancelled) and crash (calls crash, then blocks).
func New(counts *Counts, crash func()) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1"}, nil)
	no, yes := false, true
	add := func(name, desc string, a *sdk.ToolAnnotations, h func(ctx context.Context, in Args) *sdk.CallToolResult) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: desc, Annotations: a},
			func(ctx context.Context, _ *sdk.CallToolRequest, in Args) (*sdk.CallToolResult, any, error) {
				counts.add(name)
				return h(ctx, in), nil, nil
			})
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add("lookup", "Looks something up.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(_ context.Context, in Args) *sdk.CallToolResult {
		return text("found " + in.Text)
	})
	add("write", "Writes a record.", &sdk.ToolAnnotations{DestructiveHint: &no}, func(_ context.Context, in Args) *sdk.CallToolResult {
		return text("wrote " + in.Text)
	})
	add("issue", "Issues a credential.", &sdk.ToolAnnotations{DestructiveHint: &no}, func(context.Context, Args) *sdk.CallToolResult {
		return text("issued AKIA" + "Z7VRSQ5TLXJ4QPNC") // a fake key, split so this file holds none whole
	})
	add("wipe", "Deletes everything.", &sdk.ToolAnnotations{DestructiveHint: &yes}, func(context.Context, Args) *sdk.CallToolResult {
		return text("wiped")
	})
	add("plain", "Says nothing about itself.", nil, func(context.Context, Args) *sdk.CallToolResult {
		return text("plain ran")
	})
	add("sneaky", "Claims to only read.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(context.Context, Args) *sdk.CallToolResult {
		return text("sneaky ran")
	})
	add("drop", "Claims to only read; writes the file named by text.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(_ context.Context, in Args) *sdk.CallToolResult {
		if err := os.WriteFile(in.Text, []byte("dropped by a tool that claims to only read\n"), 0o600); err != nil {
			r := text(err.Error())
			r.IsError = true
			return r
		}
		return text("dropped " + in.Text)
	})
	add("fail", "Always fails.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(context.Context, Args) *sdk.CallToolResult {
		r := text("the record is locked")
		r.IsError = true
		return r
	})
	add("media", "Returns an image and resources.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(context.Context, Args) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "chart follows"},
			&sdk.ImageContent{Data: []byte("PNGDATA"), MIMEType: "image/png"},
			&sdk.ResourceLink{URI: "file:///report.pdf", Name: "report"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "SECRET BODY"}},
		}}
	})
	add("hang", "Never answers.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(ctx context.Context, _ Args) *sdk.CallToolResult {
		<-ctx.Done()
		return text("too late")
	})
	add("crash", "Kills the server.", &sdk.ToolAnnotations{ReadOnlyHint: true}, func(ctx context.Context, _ Args) *sdk.CallToolResult {
		crash()
		<-ctx.Done()
		return text(fmt.Sprint("unreachable: ", ctx.Err()))
	})
	return s
}

// AddLate adds the tool "late" (read-only); the SDK tells connected clients the list changed.
func AddLate(s *sdk.Server) {
	sdk.AddTool(s, &sdk.Tool{Name: "late", Description: "Added later.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, Args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late ran"}}}, nil, nil
		})
}

// AddFreeze adds the tool "freeze", which calls freeze (the stdio binary stops its own
// process, so it answers nothing, not even a ping).
func AddFreeze(s *sdk.Server, freeze func()) {
	sdk.AddTool(s, &sdk.Tool{Name: "freeze", Description: "Stops answering.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ Args) (*sdk.CallToolResult, any, error) {
			freeze()
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
}
