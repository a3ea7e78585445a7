package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core"
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

// runReplica starts `plangate serve` in dir and returns once /readyz is 200: every channel
// is running and takes what it is sent (a webhook or interactions endpoint answers 503
// before that), so a test may post at once. A standby replica is ready too (its check says
// so).
func runReplica(t *testing.T, ctx context.Context, dir string, env ...string) *replicaProc {
	t.Helper()
	p := launchReplica(t, ctx, dir, env...)
	p.ready(t, ctx)
	return p
}

// launchReplica starts `plangate serve` in dir and returns once its HTTP server listens,
// which is before its channels take anything: wait with until for what the test needs.
func launchReplica(t *testing.T, ctx context.Context, dir string, env ...string) *replicaProc {
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
	var check string
	p.until(t, ctx, "was ready", func(code int, r readyJSON) bool {
		check = r.Checks["telegram"]
		return code == http.StatusOK && want(check)
	})
	return check
}

// until polls /readyz until cond holds for its status and checks.
func (p *replicaProc) until(t *testing.T, ctx context.Context, what string, cond func(code int, r readyJSON) bool) {
	t.Helper()
	p.poll(t, ctx, what, func() bool {
		res, err := http.Get(p.base + "/readyz")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var r readyJSON
		return json.NewDecoder(res.Body).Decode(&r) == nil && cond(res.StatusCode, r)
	})
}

// logged waits until the process has logged a line holding msg.
func (p *replicaProc) logged(t *testing.T, ctx context.Context, msg string) {
	t.Helper()
	p.poll(t, ctx, "logged "+strconv.Quote(msg), func() bool { return strings.Contains(p.logs.String(), msg) })
}

// poll checks cond every 20 ms until it holds; what names the wait in the failure, which
// comes when ctx ends or the process does.
func (p *replicaProc) poll(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s never %s:\n%s", p.base, what, p.logs)
		case <-p.exited:
			t.Fatalf("%s ended before it %s:\n%s", p.base, what, p.logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// replicaTest is the set-up the multi-replica tests share: one PostgreSQL database, a fake
// Telegram (and, with slackHTTP, a fake Slack's Web API for mode http), the echo model
// (holding turns that mention "hold-" until released), and two replica directories with
// the same configuration.
type replicaTest struct {
	t    *testing.T
	ctx  context.Context
	dsn  string
	tg   *soakTelegram
	sl   *killSlack // nil without slackHTTP
	hold *modelHold
	dirs [2]string
	env  []string
}

func newReplicaTest(t *testing.T, ctx context.Context, mode string, slackHTTP bool) *replicaTest {
	return newReplicaTestOn(t, ctx, mode, slackHTTP, pgtest.Schema(t))
}

// newReplicaTestOn is newReplicaTest on the database dsn (of a server the test owns).
func newReplicaTestOn(t *testing.T, ctx context.Context, mode string, slackHTTP bool, dsn string) *replicaTest {
	rt := &replicaTest{t: t, ctx: ctx, dsn: dsn, tg: newSoakTelegram(), hold: newModelHold(),
		env: []string{"TELEGRAM_BOT_TOKEN=4242:soak-token", "SOAK_KEY=k", "TG_SECRET=replica-secret",
			"SLACK_BOT_TOKEN=xoxb-replica-test", "SLACK_SIGNING_SECRET=" + replicaSigningSecret}}
	t.Cleanup(rt.hold.release)
	tgSrv := httptest.NewServer(rt.tg)
	t.Cleanup(tgSrv.Close)
	model := httptest.NewServer(rt.hold.wrap(echoModel(true)))
	t.Cleanup(model.Close)
	slackCfg := "slack: {enabled: false}"
	if slackHTTP {
		rt.sl = newKillSlack(t)
		rt.sl.release() // users.info answers at once
		slackCfg = fmt.Sprintf(`slack: {enabled: true, mode: http, bot_token: "${SLACK_BOT_TOKEN}", signing_secret: "${SLACK_SIGNING_SECRET}", api_url: %q}`, rt.sl.srv.URL+"/api/")
	}
	cfg := fmt.Sprintf(`store: {driver: postgres, dsn: %q}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: "${SOAK_KEY}", model: echo, max_retries: 0, timeout: 10s}
plan_mode: {nudges: [2s], nudge_grace: 1h}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s, mode: %s, webhook_secret: "${TG_SECRET}"}
  %s
http: {listen: "127.0.0.1:0", public_url: "http://127.0.0.1:1"}
`, rt.dsn, model.URL+"/v1", tgSrv.URL, mode, slackCfg)
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
			if rt.answered(m) == 0 {
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

// answered counts the answers to text: on Slack for texts sent there ("s-…", "hold-sl…"),
// else on Telegram.
func (rt *replicaTest) answered(text string) int {
	if onSlack(text) {
		return rt.sl.soakCount("echo: " + text + "\n")
	}
	return rt.tg.count("echo: " + text + "\n")
}

// onSlack reports whether a test text was sent on Slack.
func onSlack(text string) bool {
	return strings.HasPrefix(text, "s-") || strings.HasPrefix(text, "hold-sl")
}

// check: every text answered exactly once (on each platform twicePerKill duplicates
// tolerated per kill: delivery is at least once, see docs/decisions.md), every decision once in the
// store and in the chat (give or take that window), the reminder once.
func (rt *replicaTest) check(texts []string, kills, twicePerKill int) {
	t := rt.t
	var twice []string
	twiceOn := map[bool]int{} // on Slack?
	for _, m := range texts {
		if n := rt.answered(m); n > 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", m, n))
			twiceOn[onSlack(m)]++
		}
	}
	accepted := rt.tg.count("Accepted plan v1")
	t.Logf("replicas: %d messages, %d answered twice, decisions announced %d (want 2), reminders %d",
		len(texts), len(twice), accepted, rt.tg.countIn(2, "has waited"))
	if twiceOn[false] > kills*twicePerKill || twiceOn[true] > kills*twicePerKill || (len(twice) > 0 && os.Getenv("PLANGATE_SOAK_STRICT") == "1") {
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

// Two `plangate serve` replicas on one PostgreSQL database take Telegram webhooks and
// Slack events (mode http, signed) spread over both. In the middle one of them is killed
// with SIGKILL while it holds a Telegram update and a Slack event it acknowledged and had
// not answered (their turns wait at the model), and it never comes back: Telegram and
// Slack, getting no answer, deliver to the other (Slack as a retry). The survivor adopts
// the dead replica's inboxes at its next takeover tick and answers those two. Every update
// and event is answered once, every decision and reminder happens once; an event Slack
// retries after it was answered is not answered again.
func TestReplicasWebhooksKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rt := newReplicaTest(t, ctx, telegram.ModeWebhook, true)
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
	var nextID, nextEvent int
	var took, slackTook [2]int // updates and events each replica answered 200
	// deliver posts to the replicas, starting with first, until one answers 200, as the
	// platforms do; it returns the one that did.
	deliver := func(first int, post func(r *replicaProc, attempt int) (int, error)) int {
		for i := 0; ; i++ {
			mu.Lock()
			n := (first + i) % 2
			r := reps[n]
			mu.Unlock()
			if code, err := post(r, i); err == nil && code == http.StatusOK {
				return n
			}
			if ctx.Err() != nil {
				t.Fatal("timed out delivering an update")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send := func(body func(id int) string) {
		mu.Lock()
		nextID++
		id := nextID
		mu.Unlock()
		b := body(id)
		n := deliver(id, func(r *replicaProc, _ int) (int, error) { return postTelegramUpdate(ctx, r.base, b) })
		mu.Lock()
		took[n]++
		mu.Unlock()
	}
	var slackBodies []string
	sendSlack := func(dm int, text string, first int) {
		mu.Lock()
		nextEvent++
		b := slackDM(nextEvent, dm, text)
		slackBodies = append(slackBodies, b)
		mu.Unlock()
		n := deliver(first, func(r *replicaProc, attempt int) (int, error) { return postSlackEvent(ctx, r.base, b, attempt) })
		mu.Lock()
		slackTook[n]++
		mu.Unlock()
	}
	var slackTexts []string
	texts := rt.push(16, send, func(k int) {
		if k == 5 {
			// Held at the model: acknowledged by replica 0, unanswered when it dies.
			if code, err := postTelegramUpdate(ctx, reps[0].base, soakMessage(10_000, 9, "hold-tg")); err != nil || code != http.StatusOK {
				t.Fatalf("the held update: %d %v", code, err)
			}
			if code, err := postSlackEvent(ctx, reps[0].base, slackDM(10_000, 9, "hold-sl"), 0); err != nil || code != http.StatusOK {
				t.Fatalf("the held event: %d %v", code, err)
			}
			rt.hold.wait(t, ctx, "hold-tg", "hold-sl")
			reps[0].signal(syscall.SIGKILL) // and never started again
			rt.hold.release()
		}
		if k%2 == 0 {
			for dm := range 4 {
				text := fmt.Sprintf("s-%d-%d", dm, k)
				slackTexts = append(slackTexts, text)
				sendSlack(dm, text, k/2+dm)
			}
		}
	})
	texts = append(append(texts, slackTexts...), "hold-tg", "hold-sl")
	logs := func() string { return reps[0].logs.String() + reps[1].logs.String() }
	rt.settle(texts, func(c int, data string) { send(func(id int) string { return soakClick(id, c, data) }) }, logs)
	t.Logf("telegram updates taken per replica %v, slack events %v", took, slackTook)
	if took[0] == 0 || took[1] == 0 || slackTook[0] == 0 || slackTook[1] == 0 {
		t.Errorf("updates taken per replica: %v, slack events %v; want them spread over both", took, slackTook)
	}
	if !strings.Contains(reps[1].logs.String(), "adopted the inbox of a replica that is gone") {
		t.Errorf("the survivor never adopted the dead replica's inbox:\n%s", reps[1].logs)
	}
	// Slack retries events whose answer it did not see in time: the survivor does not
	// answer them again (the last DM, answered after them, shows they were dropped).
	for _, b := range slackBodies[:4] {
		if code, err := postSlackEvent(ctx, reps[1].base, b, 1); err != nil || code != http.StatusOK {
			t.Fatalf("a late retry: %d %v", code, err)
		}
	}
	for dm := range 4 {
		sendSlack(dm, fmt.Sprintf("s-%d-last", dm), 1)
	}
	last := []string{"s-0-last", "s-1-last", "s-2-last", "s-3-last"}
	rt.settle(append(texts, last...), func(int, string) {}, logs)
	if os.Getenv("PLANGATE_SOAK_LOG") != "" {
		t.Log(logs())
	}
	rt.check(append(texts, last...), 1, 1)
}

// postTelegramUpdate sends body to a replica's webhook as Telegram does and returns the
// answer's status.
func postTelegramUpdate(ctx context.Context, base, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+telegram.WebhookPath, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "replica-secret")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// Two replicas with Telegram polling: the first polls, the second stands by (and says so
// on /readyz); the first is killed with SIGKILL and the second takes the polling lease
// over and answers what the first had not; the first, started again, stands by.
func TestReplicasPollingTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rt := newReplicaTest(t, ctx, telegram.ModePolling, false)
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
	killedAt := -1 // messages the fake had received when the first replica was dead
	texts := rt.push(16, send, func(k int) {
		switch k {
		case 5:
			first.signal(syscall.SIGKILL)
			killedAt = rt.tg.settledCount(ctx)
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
	l, err := st.Lease(ctx, "poller:telegram:SoakBot", time.Now())
	st.Close()
	if err != nil || !strings.Contains(l.Owner, "/"+strconv.Itoa(second.cmd.Process.Pid)+"/") {
		t.Errorf("the polling lease is %+v (%v), want the second replica's", l, err)
	}
	rt.checkAcrossKill(texts, killedAt)
}

// checkAcrossKill is check for a run with one kill whose replies are all on Telegram:
// a reply may go out twice only across the kill (at least once: the killed replica sent
// it and died before marking it sent; the survivor sent it again), never twice on one
// side of it, and at most once per chat, since a session's replies go out one at a time.
func (rt *replicaTest) checkAcrossKill(texts []string, killedAt int) {
	t := rt.t
	for _, m := range texts {
		if at := rt.tg.positions("echo: " + m + "\n"); len(at) > 1 && (len(at) > 2 || at[0] >= killedAt || at[1] < killedAt) {
			t.Errorf("%q answered at %v of the messages received (the kill at %d): twice on one side of the kill", m, at, killedAt)
		}
	}
	rt.check(texts, 1, 6) // chats 3..8, one reply in flight each
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
		if _, err := fmt.Sscanf(m, "m-%d-", &c); err != nil {
			continue // not a Telegram text
		}
		tr, _ := st.Transcript(context.Background(), fmt.Sprintf("telegram:4242:%d", soakChatID(c)), 200)
		for _, e := range tr {
			rt.t.Logf("chat %d: %s %q", c, e.Role, e.Content)
		}
		rt.t.Logf("chat %d sent: %d echo lines", c, rt.tg.countIn(c, "echo:"))
	}
	// A Slack text is a thread (a session) of its own: where it is stored, if anywhere,
	// and the inboxes' records.
	mentions := func(text string) bool {
		return slices.ContainsFunc(un, func(m string) bool { return onSlack(m) && strings.Contains(text, m) })
	}
	ss, _ := st.Sessions(context.Background())
	for _, s := range ss {
		if s.Address.Channel != "slack" {
			continue
		}
		tr, _ := st.Transcript(context.Background(), s.ID, 10)
		if !slices.ContainsFunc(tr, func(e core.ChatMessage) bool { return mentions(e.Content) }) &&
			!slices.ContainsFunc(s.Injections, func(inj core.Injection) bool { return mentions(inj.Text) }) {
			continue
		}
		rt.t.Logf("slack session %s: phase %s, version %d, queued %+v", s.ID, s.Phase, s.Version, s.Injections)
		for _, e := range tr {
			rt.t.Logf("  %s %q", e.Role, e.Content)
		}
	}
	keys, err := st.ChannelStateKeys(context.Background(), "slack", "inbox")
	if err != nil {
		rt.t.Log(err)
	}
	for _, k := range keys {
		v, _, _ := st.ChannelState(context.Background(), "slack", k.Account, k.Key)
		rt.t.Logf("slack %s/%s: %.2000s", k.Account, k.Key, v)
	}
	un2, err := st.UnsentOutbox(context.Background(), nil, 0)
	rt.t.Logf("unsent outbox: %d rows, %v", len(un2), err)
	for _, o := range un2[:min(len(un2), 5)] {
		rt.t.Logf("unsent %d %s %q attempts %d", o.ID, o.SessionID, o.Reply.Text, o.Attempts)
	}
}
