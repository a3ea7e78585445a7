package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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
	if n := len(m.Tools()); n != 9 {
		t.Fatalf("%d tools over HTTP, want 9 (status %s)", n, m.Status())
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
