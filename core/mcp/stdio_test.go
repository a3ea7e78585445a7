package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/mcp"
)

var serverBin string // the stdio test server, built once by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpserver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	build := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestStdioServerEndToEnd runs the real binary over stdio: tools listed, a call, a crash
// (the process exits mid-call), the restart after the backoff, and a clean stop.
func TestStdioServerEndToEnd(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	rec, g := newRecorder(), newGate()
	cfg := mcp.Config{{Name: "bin", Command: []string{serverBin}, Env: map[string]string{"MCPSERVER_STARTS": starts},
		DenyTools: []string{"sneaky"}}}
	m, err := mcp.New(cfg, mcp.Options{Observer: rec, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if n := len(m.Tools()); n != 11 {
		t.Fatalf("%d tools after Start, want 11: %v", n, specs(m))
	}
	if out, err := call(t, m, "bin__lookup", "over stdio"); err != nil || out != "found over stdio" {
		t.Fatalf("lookup: %q, %v", out, err)
	}
	if _, err := call(t, m, "bin__crash", ""); err == nil || !strings.Contains(err.Error(), "MCP server bin failed during bin__crash") {
		t.Fatalf("crash: %v", err)
	}
	<-g.waits
	rec.waitStatus(t, "bin: down (")
	if len(m.Tools()) != 0 {
		t.Fatal("tools still offered after the crash")
	}
	g.release <- struct{}{}
	rec.waitStatus(t, "bin: up, 11 tools")
	if out, err := call(t, m, "bin__lookup", "again"); err != nil || out != "found again" {
		t.Fatalf("after the restart: %q, %v", out, err)
	}
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "start\n") != 2 {
		t.Fatalf("starts file %q, want two starts", b)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rec.waitStatus(t, "bin: stopped")
}

func TestServerThatFailsToStart(t *testing.T) {
	rec, g := newRecorder(), newGate()
	cfg := mcp.Config{{Name: "gone", Command: []string{filepath.Join(t.TempDir(), "no-such-program")}, CallTimeout: time.Second}}
	m, err := mcp.New(cfg, mcp.Options{Observer: rec, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("a server that fails to start fails Start: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	<-g.waits
	line := rec.waitStatus(t, "gone: down (")
	if !strings.Contains(line, "starting") || !strings.Contains(line, "no-such-program") {
		t.Fatalf("status %q does not say why", line)
	}
	if len(m.Tools()) != 0 {
		t.Fatal("tools offered by a server that never started")
	}
}

// TestHungServerIsRestarted: a call times out and the server does not answer a ping
// either (its process is stopped), so it is reported, withdrawn and restarted.
func TestHungServerIsRestarted(t *testing.T) {
	rec, g := newRecorder(), newGate()
	cfg := mcp.Config{{Name: "bin", Command: []string{serverBin}, CallTimeout: 200 * time.Millisecond}}
	m, err := mcp.New(cfg, mcp.Options{Observer: rec, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	_, err = call(t, m, "bin__freeze", "")
	var down *core.ToolServerDown
	if !errors.As(err, &down) || down.Server != "bin" ||
		err.Error() != "bin__freeze timed out after 200ms and MCP server bin does not answer a ping either; its tools are withdrawn until it restarts" {
		t.Fatalf("freezing call: %v", err)
	}
	<-g.waits
	line := rec.waitStatus(t, "bin: down (")
	if !strings.Contains(line, "not answering") {
		t.Fatalf("status %q", line)
	}
	if len(m.Tools()) != 0 {
		t.Fatal("a hung server's tools are still offered")
	}
	g.release <- struct{}{}
	rec.waitStatus(t, "bin: up, 12 tools")
}
