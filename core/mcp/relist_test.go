package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core/mcp"
)

// floodServer speaks MCP by hand: after the first tools/list it sends n list_changed
// notifications and then pings; later tools/list requests are counted and held until
// release is closed.
type floodServer struct {
	n       int
	mu      sync.Mutex
	held    int           // tools/list requests after the first, when the ping was answered
	pinged  chan struct{} // closed when the client answered the ping
	release chan struct{}
}

func (f *floodServer) transport(ctx context.Context, _ mcp.ServerConfig) (sdk.Transport, error) {
	ct, st := sdk.NewInMemoryTransports()
	conn, err := st.Connect(ctx)
	if err != nil {
		return nil, err
	}
	go f.serve(ctx, conn)
	return ct, nil
}

func (f *floodServer) serve(ctx context.Context, conn sdk.Connection) {
	defer conn.Close()
	lists, pingID := 0, jsonrpc.ID{}
	pingID, _ = jsonrpc.MakeID("flood-ping")
	reply := func(id jsonrpc.ID, result string) {
		_ = conn.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(result)})
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch m.Method {
			case "initialize":
				var p struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				_ = json.Unmarshal(m.Params, &p)
				reply(m.ID, `{"protocolVersion":"`+p.ProtocolVersion+`","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"flood","version":"1"}}`)
			case "tools/list":
				lists++
				if lists == 1 {
					reply(m.ID, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
					go f.flood(ctx, conn, pingID)
					continue
				}
				f.mu.Lock()
				f.held++
				f.mu.Unlock()
				go func(id jsonrpc.ID) {
					select {
					case <-f.release:
						reply(id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
					case <-ctx.Done():
					}
				}(m.ID)
			default:
				if m.IsCall() { // server/discover and the like: not supported
					_ = conn.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "not supported"}})
				}
			}
		case *jsonrpc.Response:
			if m.ID == pingID {
				f.mu.Lock()
				close(f.pinged)
				f.mu.Unlock()
			}
		}
	}
}

func (f *floodServer) flood(ctx context.Context, conn sdk.Connection, pingID jsonrpc.ID) {
	for i := 0; i < f.n; i++ {
		if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}); err != nil {
			return
		}
	}
	_ = conn.Write(ctx, &jsonrpc.Request{ID: pingID, Method: "ping", Params: json.RawMessage(`{}`)})
}

// TestListChangedFloodIsCoalesced: a server that sends a flood of list_changed
// notifications gets one re-list at a time (and one more for all that came meanwhile),
// not a goroutine and a tools/list request per notification.
func TestListChangedFloodIsCoalesced(t *testing.T) {
	f := &floodServer{n: 200, pinged: make(chan struct{}), release: make(chan struct{})}
	m, err := mcp.New(mcp.Config{{Name: "flood", Command: []string{"unused-in-memory"}}}, mcp.Options{Observer: newRecorder(), Transport: f.transport})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	<-f.pinged // every notification has been handed to the client's handler
	f.mu.Lock()
	held := f.held
	f.mu.Unlock()
	close(f.release)
	t.Logf("%d tools/list requests in flight after %d notifications", held, f.n)
	if held > 1 {
		t.Errorf("%d tools/list requests were in flight after %d notifications, want at most 1", held, f.n)
	}
}
