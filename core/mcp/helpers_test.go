package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/mcp/testdata/testserver"
)

// recorder is the Observer of the tests: statuses arrive on a channel a test can wait on.
type recorder struct {
	mu       sync.Mutex
	calls    []mcp.CallRecord
	statuses chan string
}

func newRecorder() *recorder { return &recorder{statuses: make(chan string, 100)} }

func (r *recorder) ToolCalled(c mcp.CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) ServerStatus(server, line string) { r.statuses <- server + ": " + line }

func (r *recorder) records() []mcp.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]mcp.CallRecord(nil), r.calls...)
}

// waitStatus waits for a status line containing want. The deadline only keeps a broken
// test from hanging; nothing is asserted about time.
func (r *recorder) waitStatus(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var seen []string
	for {
		select {
		case s := <-r.statuses:
			seen = append(seen, s)
			if strings.Contains(s, want) {
				return s
			}
		case <-deadline:
			t.Fatalf("no status %q; saw %q", want, seen)
		}
	}
}

// gate is the injected backoff sleep: it reports each wait and blocks until released, so
// a test can look at a server while it is down.
type gate struct {
	waits   chan time.Duration
	release chan struct{}
}

func newGate() *gate { return &gate{waits: make(chan time.Duration, 10), release: make(chan struct{})} }

func (g *gate) sleep(ctx context.Context, d time.Duration) error {
	select {
	case g.waits <- d:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// memServers serves testserver in memory, a fresh server session per (re)start; crash
// closes the client's end of the current connection, as a dying process would.
type memServers struct {
	mu     sync.Mutex
	counts *testserver.Counts
	srv    *sdk.Server
	conn   sdk.Connection
	starts int
}

func newMemServers() *memServers {
	m := &memServers{counts: &testserver.Counts{}}
	m.srv = testserver.New(m.counts, m.crash)
	return m
}

func (m *memServers) crash() {
	m.mu.Lock()
	c := m.conn
	m.mu.Unlock()
	_ = c.Close()
}

func (m *memServers) transport(ctx context.Context, _ mcp.ServerConfig) (sdk.Transport, error) {
	ct, st := sdk.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.starts++
	m.mu.Unlock()
	return transportFunc(func(ctx context.Context) (sdk.Connection, error) {
		c, err := ct.Connect(ctx)
		m.mu.Lock()
		m.conn = c
		m.mu.Unlock()
		return c, err
	}), nil
}

type transportFunc func(ctx context.Context) (sdk.Connection, error)

func (f transportFunc) Connect(ctx context.Context) (sdk.Connection, error) { return f(ctx) }

// startMem starts a Manager with one in-memory server named "ts".
func startMem(t *testing.T, cfg mcp.ServerConfig) (*mcp.Manager, *memServers, *recorder, *gate) {
	t.Helper()
	ms, rec, g := newMemServers(), newRecorder(), newGate()
	cfg.Name = "ts"
	cfg.Command = []string{"unused-in-memory"}
	m, err := mcp.New(mcp.Config{cfg}, mcp.Options{Observer: rec, Transport: ms.transport, Sleep: g.sleep})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, ms, rec, g
}
