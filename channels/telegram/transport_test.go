package telegram

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTransportKeepsConnections: after twenty requests at once, twenty more at once reuse
// the connections of the first instead of dialing (net/http's default keeps two).
func TestTransportKeepsConnections(t *testing.T) {
	const concurrent = 20
	var arrived sync.WaitGroup
	arrived.Add(concurrent)
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			arrived.Done()
			<-gate // every first-round request holds its own connection
		}
		io.WriteString(w, `{"ok":true,"result":true}`)
	}))
	defer srv.Close()

	tr := newTransport()
	var dials atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	round := func(path string) {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				resp, err := hc.Get(srv.URL + path)
				if err != nil {
					t.Error(err)
					return
				}
				// Read to the end: at EOF the connection is back in the idle pool.
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					t.Error(err)
				}
				resp.Body.Close()
			})
		}
		if path == "/first" {
			arrived.Wait()
			close(gate)
		}
		wg.Wait()
	}
	round("/first")
	if n := dials.Load(); n != concurrent {
		t.Fatalf("the first round dialed %d connections, want %d", n, concurrent)
	}
	round("/second")
	if n := dials.Load() - concurrent; n != 0 {
		t.Errorf("the second round dialed %d new connections, want 0 (all reused)", n)
	}
}
