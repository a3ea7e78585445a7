package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// slowModel is an OpenAI-compatible model that, while hold is set, never answers a
// message containing "long" (a turn longer than the shutdown grace) and otherwise answers
// "answer: <the person's text>".
type slowModel struct {
	hold  atomic.Bool
	calls atomic.Int32
}

func (m *slowModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	last := ""
	for _, msg := range req.Messages {
		if s, ok := msg.Content.(string); ok && msg.Role == "user" {
			last = s
		}
	}
	if m.hold.Load() && strings.Contains(last, "long") {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": "answer: " + last}}},
	})
}

// TestSIGTERMDuringALongTurnKeepsQueuedMessages stops a real serve process with SIGTERM
// while a turn runs past the 30 s grace and a second message waits behind it: the second
// is not marked handled, the stop says so instead of "stopped cleanly", and the next
// start answers it.
func TestSIGTERMDuringALongTurnKeepsQueuedMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out serve's 30 s shutdown grace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	model := &slowModel{}
	model.hold.Store(true)
	msrv := httptest.NewServer(model)
	defer msrv.Close()
	bot := &fakeBotAPI{}
	var polls atomic.Int32 // getUpdates calls
	bsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/getUpdates") {
			polls.Add(1)
		}
		bot.ServeHTTP(w, r)
	}))
	defer bsrv.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: k, model: m, timeout: 300s, max_retries: 0}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
`, msrv.URL+"/v1", bsrv.URL)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func() (*commandRun, func() string) {
		cmd := plangateCmd(t, ctx, dir, "serve")
		cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=123:sigterm-test")
		return startLogged(t, cmd)
	}
	waitFor := func(what string, logs func() string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s\n%s", what, logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	answered := func(text string) int {
		n := 0
		for _, c := range bot.called("sendMessage") {
			if strings.Contains(c, "answer: "+text) {
				n++
			}
		}
		return n
	}

	first, logs := serve()
	bot.push(privateMessage(1, "a long job"))
	waitFor("the long turn to start", logs, func() bool { return model.calls.Load() >= 1 })
	// The poll that hands the message out is in flight now or the next one; the one after
	// it starts only once the message is in the inbox and with the engine.
	since := polls.Load()
	bot.push(privateMessage(2, "the queued message"))
	waitFor("the queued message to be received", logs, func() bool { return polls.Load() >= since+2 })
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	first.wait()
	out := logs()
	if strings.Contains(out, "stopped cleanly") {
		t.Errorf("the stop says it was clean while a message was left:\n%s", out)
	}
	if !strings.Contains(out, "kept for the next start") {
		t.Errorf("the stop does not say what was kept:\n%s", out)
	}
	if answered("the queued message") != 0 {
		t.Fatalf("the queued message was answered before the stop")
	}

	model.hold.Store(false)
	second, logs2 := serve()
	waitFor("the queued message to be answered after the restart", logs2, func() bool { return answered("the queued message") > 0 })
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	second.wait()
	if n := answered("the queued message"); n != 1 {
		t.Errorf("the queued message was answered %d times", n)
	}
}
