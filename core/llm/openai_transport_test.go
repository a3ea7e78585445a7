package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestOpenAIKeepsConnectionsUnderConcurrency: sessions calling the model at once reuse
// their connections. Without a pool sized for them (net/http keeps two idle connections
// per host) a connection back from a call finds the pool full and is closed, and the next
// call dials again. With the pool, a call dials only when every connection is in use or
// being dialed, so there are never more than two per caller.
func TestOpenAIKeepsConnectionsUnderConcurrency(t *testing.T) {
	answer := []byte(textReply("ok").body)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	var dials atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "m"}, nil) // its own client
	if err != nil {
		t.Fatal(err)
	}
	const callers, calls = 32, 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, err := o.Complete(context.Background(), userRequest("hi")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := dials.Load(); n > 2*callers {
		t.Errorf("%d connections for %d callers making %d calls each, want at most %d", n, callers, calls, 2*callers)
	}
}
