package channeltest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
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

// Paced runs b.N timed round trips from workers goroutines at rate trips per second in
// all, an open schedule instead of RoundTrips' closed loop: worker w's k-th trip (n =
// k×workers + w) is due at start + (k + w/workers)×workers/rate, and starts then, or when
// its last trip ended if that is later (a sender waits for the reply, as a person does).
// late is how many trips were due over a millisecond before the worker's last one ended:
// when it is not small the run offered less than rate, and the latencies (timed from
// each start, not from when it was due) hide that queueing.
func Paced(b *testing.B, workers int, rate float64, trip func(worker, n int) (time.Duration, error)) (latencies []time.Duration, elapsed time.Duration, late int) {
	b.Helper()
	var (
		mu     sync.Mutex
		failed error
		wg     sync.WaitGroup
	)
	every := time.Duration(float64(workers) / rate * float64(time.Second))
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for k := 0; k*workers+w < b.N; k++ {
				due := start.Add(time.Duration(k)*every + every*time.Duration(w)/time.Duration(workers))
				wait := time.Until(due)
				behind := wait < -time.Millisecond
				if wait > 0 {
					time.Sleep(wait)
				}
				d, err := trip(w, k*workers+w)
				mu.Lock()
				if behind {
					late++
				}
				if err != nil && failed == nil {
					failed = err
				}
				latencies = append(latencies, d)
				stop := failed != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	return latencies, elapsed, late
}

// Drive is RoundTrips when rate is 0, else Paced at rate, reporting its late trips
// (late_trips).
func Drive(b *testing.B, workers int, rate float64, trip func(worker, n int) (time.Duration, error)) ([]time.Duration, time.Duration) {
	b.Helper()
	if rate == 0 {
		return RoundTrips(b, workers, trip)
	}
	latencies, elapsed, late := Paced(b, workers, rate, trip)
	b.ReportMetric(float64(late), "late_trips")
	return latencies, elapsed
}

// Alternate picks every other trip of each of Paced's workers (n = k×workers + w), half
// of each worker's and half of all, for a benchmark's mixed case. (RoundTrips numbers
// trips in the order they start, so n%2 does that there.)
func Alternate(workers int) func(n int) bool {
	return func(n int) bool { return n >= 0 && (n/workers+n%workers)%2 == 0 }
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

// Usage is what the process has consumed so far: CPU (user and system, from getrusage)
// and bytes it caused to be written to storage (write_bytes of /proc/self/io; zero where
// that file is missing). Benchmarks divide the difference of two by the messages between.
// It is the whole test process: the platform fake, the fake model and the benchmark's
// own goroutines are counted with the gateway.
type Usage struct {
	CPU        time.Duration // user and system
	Sys        time.Duration // system alone: syscalls, fsync's kernel work, wake-ups
	WriteBytes int64
	// RunQ is the time the process's threads were runnable but waited for a CPU, summed
	// over them (the second field of /proc/self/task/*/schedstat; zero where missing):
	// the machine's other processes taking the CPUs, which Go's scheduler cannot see.
	RunQ time.Duration
}

// ReadUsage takes a Usage snapshot.
func ReadUsage() Usage {
	var u Usage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		u.Sys = time.Duration(ru.Stime.Nano())
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	for _, t := range tasks {
		if b, err := os.ReadFile(t); err == nil { // a thread may just have ended
			if v := strings.Fields(string(b)); len(v) >= 2 {
				wait, _ := strconv.ParseInt(v[1], 10, 64)
				u.RunQ += time.Duration(wait)
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
				u.WriteBytes, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	return u
}

// ReportUsage reports the CPU (cpu-ms/msg, of which sys-ms/msg in the kernel), disk
// writes (disk-KB/msg) and the threads' wait for a CPU (runq-ms/msg, see Usage.RunQ) per
// message between from and now.
func ReportUsage(b *testing.B, from Usage, msgs int) {
	b.Helper()
	if msgs == 0 {
		return
	}
	to := ReadUsage()
	b.ReportMetric(float64(to.CPU-from.CPU)/float64(time.Millisecond)/float64(msgs), "cpu-ms/msg")
	b.ReportMetric(float64(to.Sys-from.Sys)/float64(time.Millisecond)/float64(msgs), "sys-ms/msg")
	b.ReportMetric(float64(to.WriteBytes-from.WriteBytes)/1024/float64(msgs), "disk-KB/msg")
	b.ReportMetric(float64(to.RunQ-from.RunQ)/float64(time.Millisecond)/float64(msgs), "runq-ms/msg")
}

// ModelTime is the median time one call of m takes, measured by calling it directly
// with a one-message request: what a round trip spends in the fake model, subtracted
// to leave the gateway's own share.
func ModelTime(m core.Model) time.Duration {
	req := core.ModelRequest{SessionID: "model-time", Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "how long?"}}}
	ds := make([]time.Duration, 201)
	for i := range ds {
		start := time.Now()
		_, _ = m.Complete(context.Background(), req)
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Less returns ds each reduced by d (not below zero).
func Less(ds []time.Duration, d time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, x := range ds {
		out[i] = max(x-d, 0)
	}
	return out
}

// SpacedTrips runs b.N round trips one at a time, trip n in conversation n % convs, with
// gap of idleness after each reply: messages that arrive alone, far enough apart that
// nothing coalesces and nothing queues. It returns each trip's latency.
func SpacedTrips(b *testing.B, convs int, gap time.Duration, trip func(conv, n int) (time.Duration, error)) []time.Duration {
	b.Helper()
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for n := range b.N {
		d, err := trip(n%convs, n)
		if err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, d)
		time.Sleep(gap)
	}
	b.StopTimer()
	return latencies
}

// ModelCalls records when the model was asked about each user text, for the share of a
// round trip after the model answered: reply arrival less the call's start and the
// model's own time. The model's hook runs at the start of every call.
type ModelCalls struct {
	mu sync.Mutex
	at map[string]time.Time
}

// RecordModelCalls sets m's hook to record, per last user text, when it was asked.
func RecordModelCalls(m *Model) *ModelCalls {
	c := &ModelCalls{at: map[string]time.Time{}}
	m.Hook(func(req core.ModelRequest) {
		now := time.Now()
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if msg := req.Messages[i]; msg.Role == core.RoleUser {
				c.mu.Lock()
				c.at[msg.Content] = now
				c.mu.Unlock()
				return
			}
		}
	})
	return c
}

// At is when the model was last asked about text (zero: never).
func (c *ModelCalls) At(text string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[text]
}

// WebhookTimes are a webhook benchmark's times from each request being sent: to its 200
// as the client saw it (HTTP) and as the server had it out (Server), both for requests
// over HTTP; to the 200 of those handed to the handler without the network (Direct); to
// the reply (Replies).
type WebhookTimes struct {
	HTTP, Server, Direct, Replies []time.Duration
}

// ReportWebhook reports a webhook benchmark: req/s over elapsed; p50_200_ms/p99_200_ms,
// the time to the 200 of the requests over HTTP as the client saw it (of the direct ones
// when none went over HTTP); srv_p50_ms/srv_p99_ms, the time until the server had it out
// (what a platform sees: the rest is the benchmark's own client goroutines waiting for
// the CPU); when both kinds ran, direct_p50_ms/direct_p99_ms and what HTTP added at each
// percentile in the same run, to the client (http_p50_ms, http_p99_ms) and to the
// server's answer (srv_http_p50_ms, srv_http_p99_ms); p50_reply_ms/p99_reply_ms.
func ReportWebhook(b *testing.B, elapsed time.Duration, t WebhookTimes) {
	b.Helper()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	answered := t.HTTP
	if len(answered) == 0 {
		answered = t.Direct
	}
	b.ReportMetric(Percentile(answered, 0.50), "p50_200_ms")
	b.ReportMetric(Percentile(answered, 0.99), "p99_200_ms")
	if len(t.Server) > 0 {
		b.ReportMetric(Percentile(t.Server, 0.50), "srv_p50_ms")
		b.ReportMetric(Percentile(t.Server, 0.99), "srv_p99_ms")
	}
	if len(t.HTTP) > 0 && len(t.Direct) > 0 {
		d50, d99 := Percentile(t.Direct, 0.50), Percentile(t.Direct, 0.99)
		b.ReportMetric(d50, "direct_p50_ms")
		b.ReportMetric(d99, "direct_p99_ms")
		b.ReportMetric(Percentile(t.HTTP, 0.50)-d50, "http_p50_ms")
		b.ReportMetric(Percentile(t.HTTP, 0.99)-d99, "http_p99_ms")
		if len(t.Server) > 0 {
			b.ReportMetric(Percentile(t.Server, 0.50)-d50, "srv_http_p50_ms")
			b.ReportMetric(Percentile(t.Server, 0.99)-d99, "srv_http_p99_ms")
		}
	}
	b.ReportMetric(Percentile(t.Replies, 0.50), "p50_reply_ms")
	b.ReportMetric(Percentile(t.Replies, 0.99), "p99_reply_ms")
}
