package web

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/httpserver"
	"github.com/plangate/plangate/store"
)

const sseClients = 1000

// BenchmarkWebSSE: 1,000 browsers have one conversation's stream open; each iteration
// sends one reply and measures the time until every one of them has read it. Memory per
// client is the growth of the heap and the stacks with all of them connected, divided by
// their number; the clients are raw connections with a small buffer, so the figure is
// almost all the server's side.
func BenchmarkWebSSE(b *testing.B) {
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "plangate.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ch, err := New(Config{Enabled: true, Users: testUsers, MaxStreams: sseClients}, Deps{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	hs := httpserver.New(httpserver.Config{}, nil, nil)
	ch.RegisterHTTP(hs)
	srv := httptest.NewServer(hs.Handler())
	defer srv.Close()
	rec := httptest.NewRecorder()
	ch.issue(rec, "alice")
	cookie := rec.Result().Cookies()[0]
	a := address("alice", "bench")
	ctx := context.Background()
	ch.convo(ctx, a)

	var cur atomic.Pointer[sync.WaitGroup]
	var connected sync.WaitGroup
	connected.Add(sseClients)
	before := heapAndStacks()
	conns := make([]net.Conn, 0, sseClients)
	errs := make(chan error, sseClients)
	for range sseClients {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		go func() {
			fmt.Fprintf(conn, "GET /c/bench/events?after=%s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nCookie: %s=%s\r\n\r\n",
				ch.eventID(0), cookie.Name, cookie.Value)
			r := bufio.NewReaderSize(conn, 512)
			status, err := r.ReadString('\n')
			if err != nil || !strings.Contains(status, "200") {
				errs <- fmt.Errorf("stream: %q %v", status, err)
				connected.Done()
				return
			}
			connected.Done()
			for {
				line, err := r.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				if bytes.HasPrefix(line, []byte("event: msg")) {
					cur.Load().Done()
				}
			}
		}()
	}
	connected.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	time.Sleep(100 * time.Millisecond) // let every handler reach its wait
	perClient := float64(heapAndStacks()-before) / sseClients

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		wg := &sync.WaitGroup{}
		wg.Add(sseClients)
		cur.Store(wg)
		start := time.Now()
		if _, err := ch.Send(ctx, core.Reply{To: a, Text: fmt.Sprintf("reply %d", i)}); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(channeltest.Percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(channeltest.Percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(perClient/1024, "KB/client")
	for _, c := range conns {
		_ = c.Close()
	}
}

func heapAndStacks() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
