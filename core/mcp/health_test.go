package mcp_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/mcp"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// TestServersStates: the real stdio binary starts (up since Start), crashes mid-call (down
// since the crash, the call's error kept), and comes back after one restart (up again,
// its since moved on); a server whose program does not exist is down since its first
// failure and stays down since then across its failed restarts, each counted.
func TestServersStates(t *testing.T) {
	clk := coretest.NewClock(t0)
	start := func(cfg mcp.ServerConfig) (*mcp.Manager, *recorder, *gate) {
		rec, g := newRecorder(), newGate()
		m, err := mcp.New(mcp.Config{cfg}, mcp.Options{Observer: rec, Sleep: g.sleep, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, rec, g
	}
	m, rec, g := start(mcp.ServerConfig{Name: "ts", Command: []string{serverBin}})
	gone, _, goneGate := start(mcp.ServerConfig{Name: "gone", Command: []string{filepath.Join(t.TempDir(), "no-such-program")}})
	<-goneGate.waits // gone's first backoff
	rec.waitStatus(t, "ts: up, 12 tools")
	if st := m.Servers(); len(st) != 1 || st[0].Name != "ts" || st[0].State != mcp.StateUp || !st[0].Since.Equal(t0) || st[0].Tools != 12 ||
		st[0].Restarts != 0 || st[0].LastError != "" {
		t.Fatalf("ts after start: %+v", st)
	}
	if st := gone.Servers()[0]; st.Name != "gone" || st.State != mcp.StateDown || !st.Since.Equal(t0) || st.Restarts != 0 ||
		!strings.Contains(st.LastError, "no-such-program") {
		t.Fatalf("gone after start: %+v", st)
	}

	// gone fails its restarts: still down since t0, restarts counted.
	clk.Set(t0.Add(time.Minute))
	for range 2 {
		goneGate.release <- struct{}{}
		<-goneGate.waits
	}
	if got := gone.Servers()[0]; got.State != mcp.StateDown || !got.Since.Equal(t0) || got.Restarts != 2 {
		t.Fatalf("gone after two failed restarts: %+v", got)
	}

	// ts crashes mid-call: down since then, and up again after one restart.
	clk.Set(t0.Add(2 * time.Minute))
	if _, err := m.Call(context.Background(), core.Workspace{}, "ts__crash", nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	<-g.waits
	// Which end is seen first is a race with two true reasons: the call's error ("failed
	// during a call: …") or the supervisor's wait on the process ("connection lost: exit
	// status 3"). Either is kept; what matters is that one is.
	got := m.Servers()[0]
	if why := got.LastError; !strings.Contains(why, "failed during a call") && !strings.Contains(why, "connection lost: exit status 3") {
		t.Errorf("ts after its crash: last error %q names neither the call nor the exit", why)
	}
	if got.State != mcp.StateDown || !got.Since.Equal(t0.Add(2*time.Minute)) || got.Tools != 0 {
		t.Fatalf("ts after its crash: %+v", got)
	}
	clk.Set(t0.Add(3 * time.Minute))
	g.release <- struct{}{}
	rec.waitStatus(t, "ts: up, 12 tools")
	if got := m.Servers()[0]; got.State != mcp.StateUp || !got.Since.Equal(t0.Add(3*time.Minute)) || got.Restarts != 1 || got.LastError == "" {
		t.Fatalf("ts after its restart: %+v", got)
	}
	for _, mgr := range []*mcp.Manager{m, gone} {
		_ = mgr.Close()
		if s := mgr.Servers()[0]; s.State != mcp.StateStopped {
			t.Errorf("%s after Close: %+v", s.Name, s)
		}
	}
}

// TestDownReasonHidesSecrets: a server that fails to start with its secrets in the error
// text (the program path here quotes an env value, a flag's value and a header-like
// token) reports the failure with each replaced, in Servers, the status line and the log.
func TestDownReasonHidesSecrets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "env-SECRET-1234")
	prog := filepath.Join(dir, "prog-flag-SECRET-5678")
	cfg := mcp.Config{{Name: "leaky", Command: []string{prog, "--token", "flag-SECRET-5678"}, Args: []string{"--key=key-SECRET-9999", "-v"},
		Env: map[string]string{"TOKEN": "env-SECRET-1234", "DEBUG": "1"}}}
	m, line := startDown(t, cfg)
	got := m.Servers()[0].LastError
	for _, text := range []string{line, got, m.Status()} {
		if strings.Contains(text, "SECRET") || !strings.Contains(text, "[redacted]") || !strings.Contains(text, "starting") {
			t.Errorf("not scrubbed, or says nothing: %q", text)
		}
	}
}

// TestURLServerDownHidesSecrets: an HTTP server that refuses the connection is down with
// an error that quotes its URL; the URL's password and query value are replaced.
func TestURLServerDownHidesSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: the connection is refused
	cfg := mcp.Config{{Name: "web", URL: "http://u:pw-SECRET-1@" + addr + "/mcp?key=query-SECRET-2",
		Headers: map[string]string{"Authorization": "Bearer header-SECRET-3"}}}
	m, line := startDown(t, cfg)
	got := m.Servers()[0].LastError
	for _, text := range []string{line, got} {
		if strings.Contains(text, "SECRET") || !strings.Contains(text, addr) {
			t.Errorf("not scrubbed, or does not say where: %q", text)
		}
	}
}

// startDown starts a manager of the one server in cfg, which fails to start, and returns
// it with its status line once it says the server is down (its first backoff waiting).
func startDown(t *testing.T, cfg mcp.Config) (*mcp.Manager, string) {
	t.Helper()
	rec, g := newRecorder(), newGate()
	m, err := mcp.New(cfg, mcp.Options{Observer: rec, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	<-g.waits
	return m, rec.waitStatus(t, cfg[0].Name+": down (")
}
