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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// killSlack is a minimal Slack for killing a real serve process: the Web API methods a
// DM and its answer need, with a users.info that can be made to hang, and a Socket Mode
// websocket that delivers every queued envelope until it is acknowledged, as Slack does:
// one a killed process never acknowledged comes again on the next connection.
type killSlack struct {
	srv *httptest.Server

	mu       sync.Mutex
	changed  chan struct{}
	hang     chan struct{} // users.info waits while this is open
	envs     []slackEnvelope
	conns    int
	acks     map[string]bool
	posts    []string // texts of chat.postMessage
	postGens []int    // which start sent each post: startOf, or the Socket Mode connections so far
	// startOf, when set, names the plangate start that is running. A start posts its
	// outbox backlog before it connects, so counting connections can credit one start
	// with another's posts.
	startOf  func() int
	nextTS   int
	userInfo int // users.info calls seen
}

type slackEnvelope struct{ id, body string }

func newKillSlack(t *testing.T) *killSlack {
	f := &killSlack{changed: make(chan struct{}), hang: make(chan struct{}), acks: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.api)
	mux.HandleFunc("/ws", f.socket)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.release()
		f.srv.Close()
	})
	return f
}

func (f *killSlack) bumpLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// release lets users.info answer.
func (f *killSlack) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.hang:
	default:
		close(f.hang)
	}
}

func (f *killSlack) api(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	reply := func(v map[string]any) {
		v["ok"] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch method {
	case "auth.test":
		reply(map[string]any{"url": "https://kill-test.slack.com/", "team_id": "T0KILL", "user_id": "UBOT", "bot_id": "B0BOT"})
	case "apps.connections.open":
		reply(map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case "users.info":
		f.mu.Lock()
		f.userInfo++
		hang := f.hang
		f.bumpLocked()
		f.mu.Unlock()
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
		reply(map[string]any{"user": map[string]any{"id": r.PostForm.Get("user"), "name": "ann", "profile": map[string]any{"display_name": "Ann"}}})
	case "chat.postMessage":
		f.mu.Lock()
		f.nextTS++
		ts := fmt.Sprintf("1800000000.%06d", f.nextTS)
		f.posts = append(f.posts, r.PostForm.Get("text"))
		gen := f.conns
		if f.startOf != nil {
			gen = f.startOf()
		}
		f.postGens = append(f.postGens, gen)
		f.bumpLocked()
		f.mu.Unlock()
		reply(map[string]any{"channel": r.PostForm.Get("channel"), "ts": ts})
	default:
		reply(map[string]any{})
	}
}

func (f *killSlack) socket(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	f.mu.Lock()
	f.conns++
	f.bumpLocked()
	f.mu.Unlock()
	if conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`)) != nil {
		return
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var a struct {
				ID string `json:"envelope_id"`
			}
			if json.Unmarshal(data, &a) == nil && a.ID != "" {
				f.mu.Lock()
				f.acks[a.ID] = true
				f.bumpLocked()
				f.mu.Unlock()
			}
		}
	}()
	sent := map[string]bool{} // on this connection
	for {
		f.mu.Lock()
		var out []slackEnvelope
		for _, e := range f.envs {
			if !sent[e.id] && !f.acks[e.id] {
				out = append(out, e)
			}
		}
		f.mu.Unlock()
		for _, e := range out {
			if conn.WriteMessage(websocket.TextMessage, []byte(e.body)) != nil {
				return
			}
			sent[e.id] = true
		}
		select {
		case <-closed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitFor waits until cond (called with f.mu held) holds, or ctx ends.
func (f *killSlack) waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for {
		f.mu.Lock()
		ok, changed := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			f.mu.Lock()
			ok := cond()
			f.mu.Unlock()
			if !ok {
				t.Fatalf("timed out waiting for %s", what)
			}
			return
		}
	}
}

// TestSlackKillAfterAckLosesNothing kills a real serve process with SIGKILL right after
// Slack got the ack of a DM, while the sender's name is still being looked up: the
// restarted process answers the DM, once.
func TestSlackKillAfterAckLosesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newKillSlack(t)
	serve := slackServe(t, ctx, f)

	const env = "env-dm-1"
	f.queue(env, "EvKILL1", `{"type":"message","channel_type":"im","user":"U0ANN","text":"please remember this","ts":"1800000000.000001","channel":"D0ANN","event_ts":"1800000000.000001"}`)

	first, logs := serve()
	f.waitFor(t, ctx, "the ack of the DM", func() bool { return f.acks[env] })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.wait()
	f.mu.Lock()
	posted := len(f.posts)
	f.mu.Unlock()
	if posted != 0 {
		t.Fatalf("the DM was answered before the kill (users.info should still hang): %q", f.posts)
	}

	f.release()
	second, logs2 := serve()
	f.waitFor(t, ctx, "the answer after the restart", func() bool { return f.countLocked("the DM survived") > 0 || ctx.Err() != nil })
	if ctx.Err() != nil {
		t.Fatalf("the DM was never answered after the restart\n%s\n%s", logs(), logs2())
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	second.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.countLocked("the DM survived"); n != 1 {
		t.Errorf("the DM was answered %d times: %q", n, f.posts)
	}
}

// TestSlackDMAsMessageAndMentionAcrossRestart delivers a DM as message.im to one serve
// process and the same message as app_mention (another event id) to the next: it is
// answered once.
func TestSlackDMAsMessageAndMentionAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newKillSlack(t)
	f.release()
	serve := slackServe(t, ctx, f)
	inner := `"user":"U0ANN","text":"<@UBOT> please remember this","ts":"1800000000.000001","channel":"D0ANN","event_ts":"1800000000.000001"`
	f.queue("env-im", "EvIM", `{"type":"message","channel_type":"im",`+inner+`}`)
	first, logs := serve()
	f.waitFor(t, ctx, "the answer", func() bool { return f.countLocked("the DM survived") > 0 || ctx.Err() != nil })
	if ctx.Err() != nil {
		t.Fatalf("the DM was never answered\n%s", logs())
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	first.wait()

	f.queue("env-mention", "EvMENTION", `{"type":"app_mention",`+inner+`}`)
	f.queue("env-later", "EvLATER", `{"type":"message","channel_type":"im","user":"U0ANN","text":"one more thing","ts":"1800000000.000009","channel":"D0ANN","event_ts":"1800000000.000009"}`)
	second, logs2 := serve()
	f.waitFor(t, ctx, "the later answer", func() bool { return f.countLocked("Later one.") > 0 || ctx.Err() != nil })
	if ctx.Err() != nil {
		t.Fatalf("the later DM was never answered\n%s", logs2())
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	second.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.countLocked("the DM survived"); n != 1 {
		t.Errorf("the DM was answered %d times: %q", n, f.posts)
	}
}

// slackServe writes a config for serve against f and returns a function that starts one
// serve process. Its script answers each message twice over, so that answering a message
// again would show as a second identical post.
func slackServe(t *testing.T, ctx context.Context, f *killSlack) func() (*commandRun, func() string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	turns := "turns:\n"
	for range 3 {
		turns += "  - match: 'remember'\n    text: \"Noted: the DM survived.\"\n  - match: 'more'\n    text: \"Later one.\"\n"
	}
	if err := os.WriteFile(script, []byte(turns), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: script, script: %q}
channels:
  terminal: {enabled: false}
  slack: {enabled: true, bot_token: "${SLACK_BOT_TOKEN}", app_token: "${SLACK_APP_TOKEN}", api_url: %q}
`, script, f.srv.URL+"/api/")
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() (*commandRun, func() string) {
		cmd := plangateCmd(t, ctx, dir, "serve")
		cmd.Env = append(cmd.Env, "SLACK_BOT_TOKEN=xoxb-kill-test", "SLACK_APP_TOKEN=xapp-kill-test")
		return startLogged(t, cmd)
	}
}

// queue adds an events_api envelope with the inner event: sent at once while a process
// is connected, else on the next connection.
func (f *killSlack) queue(env, eventID, inner string) {
	payload := slackEventCallback(eventID, inner)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.envs = append(f.envs, slackEnvelope{env, `{"type":"events_api","envelope_id":"` + env + `","accepts_response_payload":false,"payload":` + payload + `}`})
	f.bumpLocked()
}

// slackEventCallback is the Events API payload of the inner event: what the Socket Mode
// envelope carries, and the body of an HTTP request to the Events URL.
func slackEventCallback(eventID, inner string) string {
	return `{"token":"v","team_id":"T0KILL","api_app_id":"A1","type":"event_callback","event_id":"` + eventID +
		`","event_time":1800000000,"event":` + inner + `}`
}

// countLocked counts the posts containing s; f.mu must be held.
func (f *killSlack) countLocked(s string) int {
	n := 0
	for _, p := range f.posts {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
}

// commandRun is a started process whose stderr is collected.
type commandRun struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (r *commandRun) wait() {
	<-r.done // stderr closes when the process ends
	_ = r.cmd.Wait()
}

// startLogged starts cmd and returns it with a function that returns its log so far.
func startLogged(t *testing.T, cmd *exec.Cmd) (*commandRun, func() string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs strings.Builder
	r := &commandRun{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	return r, func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
}
