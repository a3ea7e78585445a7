package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/mcp"
)

// onLog is a slog handler that runs fn once, on the goroutine that logs msg: the test
// looks at the manager at that exact point of the supervisor's loop.
type onLog struct {
	msg  string
	once *sync.Once
	fn   func()
}

func (h onLog) Enabled(context.Context, slog.Level) bool { return true }
func (h onLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(h.fn)
	}
	return nil
}
func (h onLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onLog) WithGroup(string) slog.Handler      { return h }

// TestConnectionEndIsDownAtOnce: the connection of a server ends with no call running
// (its process died). A call made as soon as the supervisor has seen it — when it logs
// the end, before its "restarting in" line — is told the server is down, not the "up,
// 9 tools" of the session that just ended: the session and its status line change
// together (TestMCPServerCrashMidTurn in core once read "not available (up, 9 tools)").
func TestConnectionEndIsDownAtOnce(t *testing.T) {
	ms, rec, g := newMemServers(), newRecorder(), newGate()
	var m *mcp.Manager
	seen := make(chan string, 1)
	log := slog.New(onLog{msg: "mcp server down; its tools are withdrawn", once: &sync.Once{}, fn: func() {
		_, err := m.Call(context.Background(), core.Workspace{}, "ts__lookup", []byte(`{"text":"x"}`))
		seen <- fmt.Sprint(err)
	}})
	m, err := mcp.New(mcp.Config{{Name: "ts", Command: []string{"unused-in-memory"}}},
		mcp.Options{Log: log, Observer: rec, Transport: ms.transport, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	rec.waitStatus(t, "ts: up, 11 tools")
	ms.crash()
	var got string
	select {
	case got = <-seen:
	case <-time.After(20 * time.Second): // a hang guard only: the log line comes at once
		t.Fatal("the supervisor never logged the end of the connection")
	}
	const want = "MCP server ts is not available (down (the server closed the connection)); its tools are withdrawn"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("call right after the connection ended: %q, want %q…", got, want)
	}
	if d := <-g.waits; d != time.Second {
		t.Fatalf("restart after %s, want 1s", d)
	}
	rec.waitStatus(t, "ts: down (the server closed the connection), restarting in 1s")
}
