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
	"testing"
	"time"
)

// TestTwoChatsOneDatabase: two real `plangate chat` processes on one database and one
// session. While A's turn waits for the model, B — started only to ask /plan status —
// must not pick up A's running turn (A holds the session's lease): the model is asked
// once, not twice, and A's answer arrives once the model answers.
func TestTwoChatsOneDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var calls atomic.Int32
	release := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "the answer from the model"}}}})
	}))
	defer model.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	dir := t.TempDir()
	cfg := fmt.Sprintf("store: {path: plangate.db}\nplans: {dir: plans}\nllm: {provider: openai, base_url: %q, api_key: k, model: m, max_retries: 0, timeout: 30s}\n", model.URL+"/v1")
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	a := startChat(t, ctx, dir)
	a.say(t, "hello there")
	for calls.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("A never asked the model")
		}
		time.Sleep(10 * time.Millisecond)
	}

	b := plangateCmd(t, ctx, dir, "chat")
	b.Stdin = strings.NewReader("/plan status\n")
	out, err := b.CombinedOutput()
	if err != nil {
		t.Fatalf("B: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "phase: off") {
		t.Errorf("B did not answer /plan status:\n%s", out)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the model was asked %d times while A's turn ran: B re-ran A's turn", n)
	}

	close(release)
	got := len(a.until(func(l string) bool { return strings.Contains(l, "the answer from the model") })) > 0 &&
		strings.Contains(a.out.Text(), "the answer from the model")
	_ = a.stdin.Close()
	_ = a.cmd.Wait()
	if !got {
		t.Error("A never printed the model's answer")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the model was asked %d times in all, want once", n)
	}
}
