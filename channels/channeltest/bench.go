package channeltest

import (
	"slices"
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
