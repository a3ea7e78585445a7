package channeltest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// RoundTrips runs b.N timed round trips spread over workers goroutines (one per
// conversation, say) and returns each trip's latency and the wall time of the whole run.
// trip gets the worker number and the trip number; the first error fails the benchmark.
func RoundTrips(b *testing.B, workers int, trip func(worker, n int) (time.Duration, error)) ([]time.Duration, time.Duration) {
	b.Helper()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    error
		next      int
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= b.N || failed != nil {
					mu.Unlock()
					return
				}
				n := next
				next++
				mu.Unlock()
				d, err := trip(w, n)
				mu.Lock()
				if err != nil && failed == nil {
					failed = err
				}
				latencies = append(latencies, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	return latencies, elapsed
}

// Percentile returns the p-quantile (0..1) of ds in milliseconds, for b.ReportMetric.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond)
}

// Replies pairs the replies "re: <text>" a platform fake receives with the messages that
// asked for them, for timing round trips. The fake calls Seen for every message it is
// sent; a round trip calls Expect before it sends text.
type Replies struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

// NewReplies returns an empty Replies.
func NewReplies() *Replies { return &Replies{waiting: map[string]chan time.Time{}} }

// Expect registers text and returns the wait for its reply: the time the fake received
// it, or an error after a while without one.
func (r *Replies) Expect(text string) func() (time.Time, error) {
	got := make(chan time.Time, 1)
	r.mu.Lock()
	r.waiting[text] = got
	r.mu.Unlock()
	return func() (time.Time, error) {
		defer func() {
			r.mu.Lock()
			delete(r.waiting, text)
			r.mu.Unlock()
		}()
		select {
		case at := <-got:
			return at, nil
		case <-time.After(patience):
			return time.Time{}, fmt.Errorf("no reply to %q", text)
		}
	}
}

// Seen is told that the fake received message text at at; a reply to an expected text
// ends its wait.
func (r *Replies) Seen(text string, at time.Time) {
	key, ok := strings.CutPrefix(text, "re: ")
	if !ok {
		return
	}
	r.mu.Lock()
	got := r.waiting[key]
	r.mu.Unlock()
	if got != nil {
		select {
		case got <- at:
		default:
		}
	}
}
