package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/mcp"
)

// TestMCPReadyzAndMetrics drives the real HTTP server of serve with two real MCP
// servers: the stdio test binary, and a program that does not exist (with a secret in
// its env that its error would quote). While ts is up it is not listed on /readyz;
// gone is a note with since when, its restarts and its error, scrubbed, and the replica
// stays ready. When ts crashes it becomes a note too; the gauges and the restart counter
// follow on /metrics.
func TestMCPReadyzAndMetrics(t *testing.T) {
	w, ts := testWeb(t, "")
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clk := coretest.NewClock(t0)
	waits, release := make(chan struct{}, 10), make(chan struct{})
	sleep := func(ctx context.Context, _ time.Duration) error {
		waits <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	secretDir := filepath.Join(t.TempDir(), "TOKEN-SECRET-value")
	cfg := mcp.Config{
		{Name: "ts", Command: []string{buildMCPServer(t)}},
		{Name: "gone", Command: []string{filepath.Join(secretDir, "no-such-program")}, Env: map[string]string{"TOKEN": "TOKEN-SECRET-value"}},
	}
	mgr, err := mcp.New(cfg, mcp.Options{Now: clk.Now, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	w.watchMCP(mgr)
	<-waits // gone's first backoff

	code, r := readyz(t, ts.URL)
	note := r.Checks["mcp:gone"]
	if code != 200 || !r.Ready || r.Checks["store"] != "ok" || len(r.Checks) != 2 {
		t.Fatalf("readyz with gone down: %d %+v", code, r)
	}
	if !strings.HasPrefix(note, "down since 2026-03-04T05:06:07Z (0 restarts), its tools withdrawn: starting: ") ||
		!strings.Contains(note, "[redacted]/no-such-program") || strings.Contains(note, "SECRET") {
		t.Errorf("gone's note: %q", note)
	}
	_, body := get(t, ts.URL+"/metrics")
	for _, want := range []string{`plangate_mcp_server_up{server="ts"} 1`, `plangate_mcp_server_up{server="gone"} 0`,
		`plangate_mcp_server_restarts_total{server="ts"} 0`, `plangate_mcp_server_restarts_total{server="gone"} 0`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, mcpLines(body))
		}
	}

	// gone fails a restart (its note keeps its since); then ts crashes mid-call.
	clk.Set(t0.Add(time.Minute))
	release <- struct{}{}
	<-waits
	if _, err := mgr.Call(context.Background(), core.Workspace{}, "ts__crash", nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	<-waits // ts's backoff: it is down now
	code, r = readyz(t, ts.URL)
	if code != 200 || !r.Ready || len(r.Checks) != 3 ||
		!strings.HasPrefix(r.Checks["mcp:gone"], "down since 2026-03-04T05:06:07Z (1 restarts), its tools withdrawn: ") ||
		!strings.HasPrefix(r.Checks["mcp:ts"], "down since 2026-03-04T05:07:07Z (0 restarts), its tools withdrawn: ") {
		t.Fatalf("readyz with both down: %d %+v", code, r)
	}
	_, body = get(t, ts.URL+"/metrics")
	for _, want := range []string{`plangate_mcp_server_up{server="ts"} 0`, `plangate_mcp_server_restarts_total{server="gone"} 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, mcpLines(body))
		}
	}
}

// mcpLines is the MCP part of a metrics text, for failure messages.
func mcpLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "plangate_mcp_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
