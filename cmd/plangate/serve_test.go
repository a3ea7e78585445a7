package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakeBotAPI is just enough of the Telegram Bot API for `plangate serve`: getMe, queued
// updates from getUpdates (held open briefly when empty), and a record of every other call.
type fakeBotAPI struct {
	mu      sync.Mutex
	updates []string // JSON update objects
	calls   []string // "method: params"
	nextID  int
}

func (f *fakeBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	_ = r.ParseMultipartForm(1 << 20)
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getMe":
		io.WriteString(w, `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"PlanGate","username":"PlanGateBot"}}`)
		return
	case "getUpdates":
		deadline := time.Now().Add(150 * time.Millisecond)
		for {
			f.mu.Lock()
			if len(f.updates) > 0 {
				out := "[" + strings.Join(f.updates, ",") + "]"
				f.updates = nil
				f.mu.Unlock()
				io.WriteString(w, `{"ok":true,"result":`+out+`}`)
				return
			}
			f.mu.Unlock()
			if time.Now().After(deadline) {
				io.WriteString(w, `{"ok":true,"result":[]}`)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	f.mu.Lock()
	f.nextID++
	id := f.nextID
	var params []string
	for k, v := range r.Form {
		params = append(params, k+"="+strings.Join(v, ","))
	}
	if r.MultipartForm != nil {
		for k := range r.MultipartForm.File {
			params = append(params, k+"=<file>")
		}
	}
	f.calls = append(f.calls, method+": "+strings.Join(params, " "))
	f.mu.Unlock()
	switch method {
	case "sendMessage", "sendDocument", "editMessageText", "editMessageCaption", "editMessageReplyMarkup":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764500000,"chat":{"id":555,"type":"private"},"text":"x"}}`, id)
	default:
		io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

func (f *fakeBotAPI) push(update string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, update)
}

func (f *fakeBotAPI) called(method string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, method+":") {
			out = append(out, c)
		}
	}
	return out
}

func privateMessage(updateID int, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764500000,"chat":{"id":555,"type":"private"},"from":{"id":777,"is_bot":false,"first_name":"Ann","username":"ann"},"text":%q}}`, updateID, updateID, text)
}

// TestServeTelegram runs `plangate serve` as a real process against a fake Bot API: a plan
// is proposed and posted as a document with buttons, accepted by a click, and SIGTERM stops
// the process cleanly with exit status 0.
func TestServeTelegram(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := &fakeBotAPI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := telegramServeDir(t, srv.URL, "")
	const token = "123456:TEST-token-never-printed"
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logs strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				logMu.Lock()
				defer logMu.Unlock()
				t.Fatalf("timed out waiting for %s; calls %v\nlogs:\n%s", what, fake.calls, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	fake.push(privateMessage(1, "/plan on tidy the docs"))
	waitFor("the plan document", func() bool { return len(fake.called("sendDocument")) > 0 })
	doc := fake.called("sendDocument")[0]
	if !strings.Contains(doc, "document=<file>") || !strings.Contains(doc, `"callback_data":"a:`) {
		t.Fatalf("plan document call: %s", doc)
	}
	approval := doc[strings.Index(doc, `"callback_data":"a:`)+len(`"callback_data":"a:`):]
	approval = approval[:strings.Index(approval, `"`)]
	fake.push(fmt.Sprintf(`{"update_id":2,"callback_query":{"id":"cb1","from":{"id":777,"is_bot":false,"first_name":"Ann"},"chat_instance":"x","data":"a:%s","message":{"message_id":5,"date":1764500000,"chat":{"id":555,"type":"private"}}}}`, approval))
	waitFor("completion", func() bool {
		for _, c := range fake.called("sendMessage") {
			if strings.Contains(c, "Plan v1 completed") {
				return true
			}
		}
		return false
	})
	if len(fake.called("answerCallbackQuery")) == 0 {
		t.Error("the button click was never answered")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-logDone
	logMu.Lock()
	defer logMu.Unlock()
	if err != nil {
		t.Fatalf("serve exited with %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "stopped cleanly") {
		t.Errorf("no clean stop in the log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "TEST-token") {
		t.Errorf("the bot token appears in the log")
	}
	// No access.approvers: one warning at start that the first person in a chat owns it.
	if n := strings.Count(logs.String(), "access.approvers is empty: on telegram the first person who writes in each chat owns its session"); n != 1 {
		t.Errorf("the open-approval warning appears %d times, want once:\n%s", n, logs.String())
	}
	var s sessionJSON
	show := plangateCmd(t, ctx, dir, "sessions", "show", "telegram:4242:555", "--json")
	show.Env = append(show.Env, "TELEGRAM_BOT_TOKEN="+token)
	out, err := show.CombinedOutput()
	if err != nil || json.Unmarshal(out, &s) != nil {
		list, _ := plangateCmd(t, ctx, dir, "sessions", "list").CombinedOutput()
		t.Fatalf("sessions show: %v %s\n%s", err, out, list)
	}
	if s.Plan == nil || s.Plan.Status != "completed" || s.Phase != "off" {
		t.Fatalf("session after serve: %+v", s)
	}
}

// flakyBotAPI drops the first connections it gets without answering, as a platform that
// cannot be reached does, then answers as fakeBotAPI.
type flakyBotAPI struct {
	*fakeBotAPI
	drop atomic.Int32 // connections still to drop
}

func (f *flakyBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.drop.Add(-1) >= 0 {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	f.fakeBotAPI.ServeHTTP(w, r)
}

// TestServeWaitsForAnUnreachablePlatform: a Telegram that drops the first connections does
// not end serve: /healthz answers, /readyz is 503 naming telegram and when it tries again,
// and once Telegram answers the channel opens and a message is answered. SIGTERM while it
// runs stops it with exit status 0.
func TestServeWaitsForAnUnreachablePlatform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := &flakyBotAPI{fakeBotAPI: &fakeBotAPI{}}
	fake.drop.Store(1 << 30) // until the test has seen serve wait
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := telegramServeDir(t, srv.URL, `http: {listen: "127.0.0.1:0"}`)
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=123456:TEST-token-never-printed")
	var logs procLog
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) { t.Helper(); logs.waitFor(t, ctx, what, cond) }
	waitFor("the retry's warning", func() bool {
		return strings.Contains(logs.String(), `msg="a chat platform cannot be reached; serve stays up and tries again"`)
	})
	if strings.Contains(logs.String(), "TEST-token-never-printed") {
		t.Fatal("the log shows the token")
	}
	m := regexp.MustCompile(`msg="http serving /healthz and /readyz" addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no address in the log:\n%s", logs.String())
	}
	base := "http://" + m[1]
	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while telegram is unreachable: %d", code)
	}
	// Until the channel is open /readyz is 503, saying why and when it tries again.
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "telegram") || !strings.Contains(body, "trying again in") {
		t.Fatalf("/readyz while opening: %d %q", code, body)
	}
	fake.drop.Store(0) // Telegram answers from now on
	waitFor("the channel to open", func() bool { return strings.Contains(logs.String(), `msg="http listening"`) })
	waitFor("/readyz 200 once telegram runs", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	fake.push(privateMessage(1, "/plan status"))
	waitFor("the answer", func() bool { return len(fake.called("sendMessage")) > 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, logs.String())
	}
}

// telegramServeDir is a directory whose config.yaml serves the demo over Telegram polling
// against the Bot API at api, with extra lines of config.
func telegramServeDir(t *testing.T, api, extra string) string {
	t.Helper()
	dir := t.TempDir()
	demo, _ := filepath.Abs(filepath.Join("..", "..", "demo"))
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
workspace: {seed: %q}
llm: {provider: script, script: %q}
%s
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
`, filepath.Join(demo, "workspace"), filepath.Join(demo, "script.yaml"), extra, api)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestServeKeepsTheChannelsThatOpened: while Slack cannot be reached, serve tries it again,
// and the Telegram channel that opened is kept: Telegram is asked who the bot is once, not
// at every attempt.
func TestServeKeepsTheChannelsThatOpened(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := &fakeBotAPI{}
	var getMe atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/getMe") {
			getMe.Add(1)
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// A Slack that takes each connection and closes it at once: no answer, ever.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var slackConns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			slackConns.Add(1)
			c.Close()
		}
	}()
	dir := telegramServeDir(t, srv.URL, `http: {listen: "127.0.0.1:0"}`)
	f, err := os.OpenFile(filepath.Join(dir, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "  slack: {enabled: true, bot_token: \"${SLACK_BOT_TOKEN}\", app_token: \"${SLACK_APP_TOKEN}\", api_url: \"http://%s/api/\"}\n", ln.Addr())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=123456:TEST-token", "SLACK_BOT_TOKEN=xoxb-test-1", "SLACK_APP_TOKEN=xapp-1-test")
	var logs procLog
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor := func(what string, cond func() bool) { t.Helper(); logs.waitFor(t, ctx, what, cond) }
	var first int64
	waitFor("the first attempt to fail", func() bool {
		first = slackConns.Load()
		return strings.Contains(logs.String(), `msg="a chat platform cannot be reached; serve stays up and tries again"`)
	})
	waitFor("the second attempt at Slack", func() bool { return slackConns.Load() > first })
	if n := getMe.Load(); n != 1 {
		t.Fatalf("Telegram was opened %d times by two attempts, want once\nlogs:\n%s", n, logs.String())
	}
}
