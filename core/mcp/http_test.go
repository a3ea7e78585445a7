package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/mcp/testdata/testserver"
)

// TestStreamableHTTPServer talks to the test server over streamable HTTP on loopback with
// the default transport: the configured headers reach the server on every request.
func TestStreamableHTTPServer(t *testing.T) {
	srv := testserver.New(&testserver.Counts{}, func() {})
	var mu sync.Mutex
	var auth []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	rec := newRecorder()
	cfg := mcp.Config{{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}}
	m, err := mcp.New(cfg, mcp.Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Tools()); n != 11 {
		t.Fatalf("%d tools over HTTP, want 11 (status %s)", n, m.Status())
	}
	if out, err := call(t, m, "web__lookup", "http"); err != nil || out != "found http" {
		t.Fatalf("lookup over HTTP: %q, %v", out, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("the server saw no request")
	}
	for i, a := range auth {
		if a != "Bearer s3cret" {
			t.Fatalf("request %d had Authorization %q", i, a)
		}
	}
}

// TestHeadersStayOnTheConfiguredHost: a server's URL that redirects elsewhere (an open
// redirect, a moved endpoint) must not carry the configured secret headers to the other
// host; Go's client drops Authorization on such a redirect, and the header transport
// must not add it back.
func TestHeadersStayOnTheConfiguredHost(t *testing.T) {
	srv := testserver.New(&testserver.Counts{}, func() {})
	var mu sync.Mutex
	var leaked []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization") + r.Header.Get("X-Key"); a != "" {
			leaked = append(leaked, a)
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	cfg := mcp.Config{{Name: "web", URL: redirect.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Key": "k3y"}}}
	m, err := mcp.New(cfg, mcp.Options{Observer: newRecorder(), Sleep: sleepForever})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Fatalf("the redirect target got the configured headers: %q", leaked)
	}
}

// TestHTTPResponseIsBounded: a server over HTTP that answers with an endless JSON body
// is cut off (as a stdio server's frame is, at 16 MB) instead of being read into memory
// whole; the server fails to start and the gateway goes on.
func TestHTTPResponseIsBounded(t *testing.T) {
	const total = 48 << 20
	served := make(chan int, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("x", 1<<20))
		n := 0
		for n < total {
			k, err := w.Write(chunk)
			n += k
			if err != nil {
				break
			}
			chunk = chunk[len(chunk)-1<<20:]
		}
		select {
		case served <- n:
		default:
		}
	}))
	t.Cleanup(ts.Close)
	m, err := mcp.New(mcp.Config{{Name: "big", URL: ts.URL}}, mcp.Options{Observer: newRecorder(), Sleep: sleepForever})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
	if n := <-served; n >= total {
		t.Errorf("the client read all %d MB of the answer", n>>20)
	}
	if len(m.Tools()) != 0 {
		t.Errorf("tools from a server that never answered properly: %v", m.Tools())
	}
}

// sleepForever is a restart backoff that never ends (until the manager closes): a server
// that failed is not tried again during the test.
func sleepForever(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}
