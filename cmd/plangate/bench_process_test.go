package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
)

// gatewayGap is the idle time after each reply of a spaced run: the same 25 ms as
// BenchmarkTelegramRoundTrip's (channels/telegram/bench_test.go), so the two compare.
// The binary keeps its inbox flushDelay of 100 ms, so here a spaced message's save after
// handling may share a transaction with the next message's (in-process, 20 ms < 25 ms).
const gatewayGap = 25 * time.Millisecond

// gatewaySlowGap is longer than the inbox's flushDelay (100 ms): each message's save after
// handling runs alone, as at one message a second.
const gatewaySlowGap = 150 * time.Millisecond

// gatewayWarmUp is how many messages each run sends before it measures: every session
// created, connections open, the runtime's heap grown.
const gatewayWarmUp = 50

// BenchmarkGatewayProcess measures the real plangate binary as its own process, as a peer
// gateway would be measured: `plangate serve` with Telegram long polling against a local
// fake Bot API and an OpenAI-compatible fake model that answers at once (both in this
// test process), the store a SQLite file in a temporary directory. Only the child is
// counted, so the numbers compare with a peer's and with the targets, unlike
// BenchmarkTelegramRoundTrip's whole-process ones.
//
// The binary is built once per run with `go build`, from the production source except
// that Telegram's pacing is lifted: a -overlay replaces defaultTuning in
// channels/telegram/telegram.go by production's tuning with the three pacing rates zero
// (no limit, as the in-process benchmark's test tuning has). There is no config key or
// environment variable for pacing. Everything else is production's default: poll_timeout
// 50 s, the inbox's flushDelay 100 ms, the typing indicator after 300 ms
// (engine.DefaultTypingDelay, never reached with an instant model), log level info to
// stderr (a pipe, read here), no HTTP server.
//
// spaced/chats=N: one message at a time, round-robin over N private chats, gatewayGap of
// idleness after each reply; spaced/chats=1/gap=150ms the same with gatewaySlowGap, so
// nothing of one message is batched with the next. saturated/chats=20: each chat sends
// its next message when the last was answered. Each run starts a fresh process and
// sends a message in every chat and gatewayWarmUp more before it measures.
//
// Reported, for the child process alone: cpu-ms/msg, its threads' time on the CPU from
// /proc/<pid>/task/*/schedstat (ns); tick-cpu-ms/msg and sys-ms/msg, utime+stime and
// stime from /proc/<pid>/stat (10 ms ticks: with -benchtime 1000x a few hundredths of a
// ms per message); runq-ms/msg, its threads' time runnable but waiting for a CPU;
// disk-KB/msg, write_bytes of /proc/<pid>/io; idle-cpu-ms/s, its CPU while nothing is
// sent (measured for a second after the warm-up); rss-MB and threads at the end;
// dials/msg, connections it opened to the Bot API; log-B/msg, bytes it logged. Latency:
// p50_ms/p99_ms from the fake handing out the update to the reply's sendMessage arriving
// at it; own-p50_ms/own-p99_ms the same less that message's time in the fake model's
// handler; after-model-p50_ms/p99_ms from the model being asked to the reply arriving,
// less the model's time; model-p50_ms; msgs/s for saturated runs.
func BenchmarkGatewayProcess(b *testing.B) {
	bin := buildGateway(b)
	for _, c := range []gatewayCase{
		{chats: 1, gap: gatewayGap}, {chats: 20, gap: gatewayGap}, {chats: 20},
		{chats: 1, gap: gatewaySlowGap},
	} {
		b.Run(c.String(), func(b *testing.B) { benchGateway(b, bin, c) })
	}
}

// gatewayCase is one run of BenchmarkGatewayProcess.
type gatewayCase struct {
	chats int
	gap   time.Duration // idleness after each reply, one message at a time; 0 = saturated
}

func (c gatewayCase) String() string {
	switch c.gap {
	case 0:
		return fmt.Sprintf("saturated/chats=%d", c.chats)
	case gatewayGap:
		return fmt.Sprintf("spaced/chats=%d", c.chats)
	}
	return fmt.Sprintf("spaced/chats=%d/gap=%s", c.chats, c.gap)
}

// liftedTuning replaces the line that opens defaultTuning in the benchmark's build.
const liftedTuning = `// defaultTuning, in BenchmarkGatewayProcess's build only: production's with pacing lifted.
func defaultTuning() tuning {
	t := productionTuning()
	t.privateEvery, t.groupEvery, t.globalEvery = 0, 0, 0
	return t
}

func productionTuning() tuning {`

// buildGateway builds cmd/plangate into a temporary directory with pacing lifted and
// returns the binary's path.
func buildGateway(b *testing.B) string {
	b.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build plangate with")
	}
	dir := b.TempDir()
	src, err := filepath.Abs(filepath.Join("..", "..", "channels", "telegram", "telegram.go"))
	if err != nil {
		b.Fatal(err)
	}
	text, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	const opening = "func defaultTuning() tuning {"
	if strings.Count(string(text), opening) != 1 {
		b.Fatalf("%s no longer has one %q to lift pacing in: update liftedTuning", src, opening)
	}
	lifted := filepath.Join(dir, "telegram.go")
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{src: lifted}})
	if err := os.WriteFile(lifted, []byte(strings.Replace(string(text), opening, liftedTuning, 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "plangate")
	out, err := exec.Command(goTool, "build", "-overlay", overlay, "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("building plangate: %v\n%s", err, out)
	}
	return bin
}

// gatewayProc is a running `plangate serve`.
type gatewayProc struct {
	cmd    *exec.Cmd
	logs   *procLog
	exited chan struct{} // closed when it has ended

	mu       sync.Mutex
	logBytes int64 // bytes it wrote to stderr
}

// startServeProc starts bin in a fresh directory against api and model and returns once
// it polls.
func startServeProc(b *testing.B, bin string, api *benchBotAPI, model *benchModel) *gatewayProc {
	b.Helper()
	dir := b.TempDir()
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: "${BENCH_MODEL_KEY}", model: bench}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q}
`, model.srv.URL+"/v1", api.srv.URL) + profileConfig()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+benchBotToken, "BENCH_MODEL_KEY=k", "OPENAI_API_KEY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &gatewayProc{cmd: cmd, logs: &procLog{}, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logBytes += int64(len(sc.Bytes()) + 1)
			p.mu.Unlock()
			p.logs.add(sc.Text())
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	b.Cleanup(p.stop)
	deadline := time.After(30 * time.Second)
	for api.polls.Load() == 0 {
		select {
		case <-p.exited:
			b.Fatalf("plangate serve ended at start:\n%s", p.logs)
		case <-deadline:
			b.Fatalf("plangate serve never polled:\n%s", p.logs)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return p
}

// stop ends the process as an operator would (SIGTERM: stop receiving, drain), and
// kills it if it has not ended in 40 s.
func (p *gatewayProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *gatewayProc) logged() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logBytes
}

// usage reads the child's counters, failing the benchmark when it is gone.
func (p *gatewayProc) usage(b *testing.B) procUsage {
	b.Helper()
	u, err := readProcUsage(p.cmd.Process.Pid)
	if err != nil {
		b.Fatalf("%v\n%s", err, p.logs)
	}
	select {
	case <-p.exited:
		b.Fatalf("plangate serve ended:\n%s", p.logs) // a zombie's /proc is still there
	default:
	}
	return u
}

// gatewaySamples are the measured trips' times.
type gatewaySamples struct {
	mu                      sync.Mutex
	lat, own, after, models []time.Duration
	record                  bool
}

func benchGateway(b *testing.B, bin string, c gatewayCase) {
	chats := c.chats
	api, model := newBenchBotAPI(b), newBenchModel(b)
	replies := channeltest.NewReplies()
	api.onSent = replies.Seen
	gw := startServeProc(b, bin, api, model)

	var s gatewaySamples
	trip := func(chat, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, 1000+chat)
		wait := replies.Expect(text)
		id := api.say(int64(1000+chat), text)
		at, err := wait()
		if err != nil {
			select {
			case <-gw.exited:
				return 0, fmt.Errorf("%w: plangate serve ended:\n%s", err, gw.logs)
			default:
				return 0, fmt.Errorf("%w:\n%s", err, gw.logs)
			}
		}
		lat, mc := at.Sub(api.servedAt(id)), model.call(text)
		s.mu.Lock()
		if s.record {
			s.lat = append(s.lat, lat)
			s.own = append(s.own, max(lat-mc.took, 0))
			s.after = append(s.after, max(at.Sub(mc.at)-mc.took, 0))
			s.models = append(s.models, mc.took)
		}
		s.mu.Unlock()
		return lat, nil
	}
	if err := warmUp(chats, c.gap == 0, trip); err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the warm-up's inbox save after flushDelay
	idle0 := gw.usage(b)
	time.Sleep(time.Second)
	idle1 := gw.usage(b)

	s.mu.Lock()
	s.record = true
	s.mu.Unlock()
	u0, dials0, log0 := gw.usage(b), api.dials.Load(), gw.logged()
	estimate := time.Duration(b.N) * time.Millisecond
	if c.gap > 0 {
		estimate = time.Duration(b.N) * (c.gap + 3*time.Millisecond)
	}
	profiled := gw.profile(b, estimate)
	if c.gap > 0 {
		channeltest.SpacedTrips(b, chats, c.gap, trip)
	} else {
		_, elapsed := channeltest.RoundTrips(b, chats, trip)
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	}
	u1 := gw.usage(b)
	profiled()
	reportGateway(b, &s, idle0, idle1, u0, u1)
	b.ReportMetric(float64(api.dials.Load()-dials0)/float64(b.N), "dials/msg")
	b.ReportMetric(float64(gw.logged()-log0)/float64(b.N), "log-B/msg")
}

// warmUp sends a message in every chat, then gatewayWarmUp more, one at a time or, when
// concurrent, from every chat at once (the connections a saturated run needs get opened).
func warmUp(chats int, concurrent bool, trip func(chat, n int) (time.Duration, error)) error {
	for c := range chats {
		if _, err := trip(c, -1-c); err != nil {
			return err
		}
	}
	workers := 1
	if concurrent {
		workers = chats
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			var err error
			for n := w; n < gatewayWarmUp && err == nil; n += workers {
				_, err = trip(n%chats, -1-chats-n)
			}
			errs <- err
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func reportGateway(b *testing.B, s *gatewaySamples, idle0, idle1, u0, u1 procUsage) {
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	tick := time.Second / userHZ
	b.ReportMetric(per(u1.onCPU-u0.onCPU), "cpu-ms/msg")
	b.ReportMetric(per(time.Duration(u1.ticks-u0.ticks)*tick), "tick-cpu-ms/msg")
	b.ReportMetric(per(time.Duration(u1.sysTicks-u0.sysTicks)*tick), "sys-ms/msg")
	b.ReportMetric(per(u1.runq-u0.runq), "runq-ms/msg")
	b.ReportMetric(float64(u1.writeBytes-u0.writeBytes)/1024/float64(b.N), "disk-KB/msg")
	b.ReportMetric(float64(idle1.onCPU-idle0.onCPU)/float64(time.Millisecond), "idle-cpu-ms/s")
	b.ReportMetric(float64(u1.rssKB)/1024, "rss-MB")
	b.ReportMetric(float64(u1.threads), "threads")
	b.ReportMetric(channeltest.Percentile(s.lat, 0.50), "p50_ms")
	b.ReportMetric(channeltest.Percentile(s.lat, 0.99), "p99_ms")
	b.ReportMetric(channeltest.Percentile(s.own, 0.50), "own-p50_ms")
	b.ReportMetric(channeltest.Percentile(s.own, 0.99), "own-p99_ms")
	b.ReportMetric(channeltest.Percentile(s.after, 0.50), "after-model-p50_ms")
	b.ReportMetric(channeltest.Percentile(s.after, 0.99), "after-model-p99_ms")
	b.ReportMetric(channeltest.Percentile(s.models, 0.50), "model-p50_ms")
}
