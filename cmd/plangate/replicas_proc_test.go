package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// replicaProc is one `plangate serve` process of a multi-replica test.
type replicaProc struct {
	cmd    *exec.Cmd
	base   string // http://host:port
	logs   *procLog
	exited chan struct{}
}

// runReplica starts `plangate serve` in dir and returns once its HTTP server listens.
func runReplica(t *testing.T, ctx context.Context, dir string, env ...string) *replicaProc {
	t.Helper()
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{cmd: cmd, logs: &procLog{}, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`msg="http listening" addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.exited:
		t.Fatalf("serve in %s ended at start:\n%s", dir, p.logs)
	case <-ctx.Done():
		t.Fatalf("serve in %s never listened:\n%s", dir, p.logs)
	}
	return p
}

func (p *replicaProc) signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	<-p.exited
}

// ready waits until /readyz is 200 and returns the telegram check.
func (p *replicaProc) ready(t *testing.T, ctx context.Context) string {
	t.Helper()
	return p.readyWith(t, ctx, func(string) bool { return true })
}

// readyWith waits until /readyz is 200 with a telegram check that passes want.
func (p *replicaProc) readyWith(t *testing.T, ctx context.Context, want func(check string) bool) string {
	t.Helper()
	for {
		res, err := http.Get(p.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				_, r := readyz(t, p.base)
				if want(r.Checks["telegram"]) {
					return r.Checks["telegram"]
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never ready:\n%s", p.base, p.logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// replicaTest is the set-up the multi-replica tests share: one PostgreSQL database, a fake
// Telegram, the echo model, and two replica directories with the same configuration.
type replicaTest struct {
	t    *testing.T
	ctx  context.Context
	dsn  string
	tg   *soakTelegram
	dirs [2]string
	env  []string
}

func newReplicaTest(t *testing.T, ctx context.Context, mode string) *replicaTest {
	rt := &replicaTest{t: t, ctx: ctx, dsn: pgtest.Schema(t), tg: newSoakTelegram(),
		env: []string{"TELEGRAM_BOT_TOKEN=4242:soak-token", "SOAK_KEY=k", "TG_SECRET=replica-secret"}}
	tgSrv := httptest.NewServer(rt.tg)
	t.Cleanup(tgSrv.Close)
	model := httptest.NewServer(echoModel(true))
	t.Cleanup(model.Close)
	cfg := fmt.Sprintf(`store: {driver: postgres, dsn: %q}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: "${SOAK_KEY}", model: echo, max_retries: 0, timeout: 10s}
plan_mode: {nudges: [2s], nudge_grace: 1h}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s, mode: %s, webhook_secret: "${TG_SECRET}"}
http: {listen: "127.0.0.1:0", public_url: "http://127.0.0.1:1"}
`, rt.dsn, model.URL+"/v1", tgSrv.URL, mode)
	for i := range rt.dirs {
		rt.dirs[i] = t.TempDir()
		if err := os.WriteFile(filepath.Join(rt.dirs[i], "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rt
}

func (rt *replicaTest) start(i int) *replicaProc {
	return runReplica(rt.t, rt.ctx, rt.dirs[i], rt.env...)
}

// push sends the plan goals of chats 0..2 and then rounds of plain messages in chats
// 3..8 through send, calling at(round) before each round; it returns the texts sent.
func (rt *replicaTest) push(rounds int, send func(body func(id int) string), at func(round int)) []string {
	for c := range 3 {
		send(func(id int) string { return soakMessage(id, c, fmt.Sprintf("/plan on plan: soak goal %d", c)) })
	}
	var texts []string
	for k := range rounds {
		at(k)
		for c := 3; c < 9; c++ {
			text := fmt.Sprintf("m-%d-%d", c, k)
			texts = append(texts, text)
			send(func(id int) string { return soakMessage(id, c, text) })
		}
		time.Sleep(15 * time.Millisecond) // a steady stream, not one burst
	}
	return texts
}

// settle clicks Accept in chats 0 and 1 once their plans are posted and waits until every
// text is answered, both plans are accepted and chat 2's reminder came.
func (rt *replicaTest) settle(texts []string, click func(chat int, data string), logs func() string) {
	clicked := map[int]bool{}
	for {
		for c := range 2 {
			if id := rt.tg.approvalOf(c); id != "" && !clicked[c] {
				clicked[c] = true
				click(c, "a:"+id)
			}
		}
		var un []string
		for _, m := range texts {
			if rt.tg.count("echo: "+m+"\n") == 0 {
				un = append(un, m)
			}
		}
		if len(un) == 0 && rt.tg.count("Accepted plan v1") >= 2 && rt.tg.countIn(2, "has waited") >= 1 {
			return
		}
		select {
		case <-rt.ctx.Done():
			rt.dump(un)
			rt.t.Fatalf("not settled: %d unanswered (%s), %d accepted, reminder %d\n%s", len(un), strings.Join(un[:min(len(un), 8)], " "),
				rt.tg.count("Accepted plan v1"), rt.tg.countIn(2, "has waited"), logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// check: every text answered exactly once (one duplicate tolerated per kill: delivery is
// at least once, see docs/decisions.md), every decision once in the store and in the chat
// (give or take that window), the reminder once.
func (rt *replicaTest) check(texts []string, kills int) {
	t := rt.t
	var twice []string
	for _, m := range texts {
		if n := rt.tg.count("echo: " + m + "\n"); n > 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", m, n))
		}
	}
	accepted := rt.tg.count("Accepted plan v1")
	t.Logf("replicas: %d messages, %d answered twice, decisions announced %d (want 2), reminders %d",
		len(texts), len(twice), accepted, rt.tg.countIn(2, "has waited"))
	if len(twice) > kills || (len(twice) > 0 && os.Getenv("PLANGATE_SOAK_STRICT") == "1") {
		t.Errorf("answered more than once: %v", twice)
	}
	if accepted > 2+kills {
		t.Errorf(`"Accepted plan v1" announced %d times for 2 accepted plans`, accepted)
	}
	st, err := store.OpenPostgres(rt.ctx, rt.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkDecisionsOnce(t, rt.ctx, st)
}

// Two `plangate serve` replicas on one PostgreSQL database take Telegram webhooks spread
// over both; one is killed with SIGKILL in the middle (Telegram, getting no answer,
// delivers to the other) and started again, adopting the inbox it left. Every update is
// answered once, every decision and reminder happens once.
func TestReplicasWebhooksKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rt := newReplicaTest(t, ctx, telegram.ModeWebhook)
	var mu sync.Mutex
	reps := [2]*replicaProc{rt.start(0), rt.start(1)}
	defer func() {
		for _, r := range reps {
			r.signal(syscall.SIGTERM)
		}
	}()
	for _, r := range reps {
		if c := r.ready(t, ctx); c != "ok" {
			t.Fatalf("telegram check %q, want ok on every replica in webhook mode", c)
		}
	}
	nextID := 1
	var idMu sync.Mutex
	var took [2]int // updates each replica answered 200
	send := func(body func(id int) string) {
		idMu.Lock()
		id := nextID
		nextID++
		idMu.Unlock()
		b := body(id)
		for i := 0; ; i++ { // as Telegram: until a replica answers 200
			mu.Lock()
			r := reps[(id+i)%2]
			mu.Unlock()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+telegram.WebhookPath, strings.NewReader(b))
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "replica-secret")
			req.Header.Set("Content-Type", "application/json")
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					mu.Lock()
					took[(id+i)%2]++
					mu.Unlock()
					return
				}
			}
			if ctx.Err() != nil {
				t.Fatal("timed out delivering an update")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	texts := rt.push(16, send, func(k int) {
		switch k {
		case 5:
			reps[0].signal(syscall.SIGKILL)
		case 10:
			r := rt.start(0)
			r.ready(t, ctx)
			mu.Lock()
			reps[0] = r
			mu.Unlock()
		}
	})
	logs := func() string { return reps[0].logs.String() + reps[1].logs.String() }
	rt.settle(texts, func(c int, data string) { send(func(id int) string { return soakClick(id, c, data) }) }, logs)
	if took[0] == 0 || took[1] == 0 {
		t.Errorf("updates taken per replica: %v; want them spread over both", took)
	}
	if os.Getenv("PLANGATE_SOAK_LOG") != "" {
		t.Log(logs())
	}
	rt.check(texts, 1)
}

// Two replicas with Telegram polling: the first polls, the second stands by (and says so
// on /readyz); the first is killed with SIGKILL and the second takes the polling lease
// over and answers what the first had not; the first, started again, stands by.
func TestReplicasPollingTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rt := newReplicaTest(t, ctx, telegram.ModePolling)
	first := rt.start(0)
	first.ready(t, ctx)
	second := rt.start(1)
	defer func() { second.signal(syscall.SIGTERM) }()
	if c := second.readyWith(t, ctx, func(c string) bool { return strings.Contains(c, "held by") }); !strings.HasPrefix(c, "standby for telegram polling (held by ") ||
		!strings.Contains(c, "/"+strconv.Itoa(first.cmd.Process.Pid)+"/") {
		t.Fatalf("the second replica's telegram check is %q, want standby for the first", c)
	}
	send := func(body func(id int) string) { rt.tg.push(body) }
	var restarted *replicaProc
	texts := rt.push(16, send, func(k int) {
		switch k {
		case 5:
			first.signal(syscall.SIGKILL)
		case 10:
			// The second replica takes the lease over at its next campaign (within
			// store.ElectionEvery, the holder being a process of this host that is gone).
			second.readyWith(t, ctx, func(c string) bool { return c == "ok" })
			restarted = rt.start(0)
		}
	})
	defer func() { restarted.signal(syscall.SIGTERM) }()
	logs := func() string { return second.logs.String() + restarted.logs.String() }
	rt.settle(texts, func(c int, data string) { rt.tg.click(c, data) }, logs)
	if os.Getenv("PLANGATE_SOAK_LOG") != "" {
		t.Log(logs())
	}
	if c := restarted.ready(t, ctx); !strings.HasPrefix(c, "standby for telegram polling") {
		t.Errorf("the restarted replica's telegram check is %q, want standby", c)
	}
	if !strings.Contains(second.logs.String(), "elected: running telegram polling") {
		t.Errorf("the second replica never took the polling lease over:\n%s", second.logs)
	}
	st, err := store.OpenPostgres(ctx, rt.dsn)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Lease(ctx, "poller:telegram:SoakBot")
	st.Close()
	if err != nil || !strings.Contains(l.Owner, "/"+strconv.Itoa(second.cmd.Process.Pid)+"/") {
		t.Errorf("the polling lease is %+v (%v), want the second replica's", l, err)
	}
	rt.check(texts, 1)
}

// dump logs the transcript of the chats with unanswered texts.
func (rt *replicaTest) dump(un []string) {
	st, err := store.OpenPostgres(context.Background(), rt.dsn)
	if err != nil {
		rt.t.Log(err)
		return
	}
	defer st.Close()
	for _, m := range un[:min(len(un), 2)] {
		var c int
		fmt.Sscanf(m, "m-%d-", &c)
		tr, _ := st.Transcript(context.Background(), fmt.Sprintf("telegram:4242:%d", soakChatID(c)), 200)
		for _, e := range tr {
			rt.t.Logf("chat %d: %s %q", c, e.Role, e.Content)
		}
		rt.t.Logf("chat %d sent: %d echo lines", c, rt.tg.countIn(c, "echo:"))
	}
	un2, err := st.UnsentOutbox(context.Background(), nil, 0)
	rt.t.Logf("unsent outbox: %d rows, %v", len(un2), err)
	for _, o := range un2[:min(len(un2), 5)] {
		rt.t.Logf("unsent %d %s %q attempts %d", o.ID, o.SessionID, o.Reply.Text, o.Attempts)
	}
}
