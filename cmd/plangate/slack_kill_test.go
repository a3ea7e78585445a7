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
// websocket that sends queued envelopes and records their acks.
type killSlack struct {
	srv *httptest.Server

	mu       sync.Mutex
	changed  chan struct{}
	hang     chan struct{} // users.info waits while this is open
	outbox   []string      // envelopes for the next connection
	conns    int
	acks     map[string]bool
	posts    []string // texts of chat.postMessage
	nextTS   int
	userInfo int // users.info calls seen
}

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
	out := f.outbox
	f.outbox = nil
	f.bumpLocked()
	f.mu.Unlock()
	if conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`)) != nil {
		return
	}
	for _, env := range out {
		if conn.WriteMessage(websocket.TextMessage, []byte(env)) != nil {
			return
		}
	}
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
			t.Fatalf("timed out waiting for %s", what)
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
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - match: 'remember'\n    text: \"Noted: the DM survived.\"\n"), 0o644); err != nil {
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
	serve := func() (*commandRun, func() string) {
		cmd := plangateCmd(t, ctx, dir, "serve")
		cmd.Env = append(cmd.Env, "SLACK_BOT_TOKEN=xoxb-kill-test", "SLACK_APP_TOKEN=xapp-kill-test")
		return startLogged(t, cmd)
	}

	const env = "env-dm-1"
	payload := `{"token":"v","team_id":"T0KILL","api_app_id":"A1","type":"event_callback","event_id":"EvKILL1","event_time":1800000000,` +
		`"event":{"type":"message","channel_type":"im","user":"U0ANN","text":"please remember this","ts":"1800000000.000001","channel":"D0ANN","event_ts":"1800000000.000001"}}`
	f.mu.Lock()
	f.outbox = append(f.outbox, `{"type":"events_api","envelope_id":"`+env+`","accepts_response_payload":false,"payload":`+payload+`}`)
	f.mu.Unlock()

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
	f.waitFor(t, ctx, "the answer after the restart\n"+logs()+logs2(), func() bool {
		for _, p := range f.posts {
			if strings.Contains(p, "the DM survived") {
				return true
			}
		}
		return false
	})
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	second.wait()
	n := 0
	for _, p := range f.posts {
		if strings.Contains(p, "the DM survived") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the DM was answered %d times: %q", n, f.posts)
	}
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
