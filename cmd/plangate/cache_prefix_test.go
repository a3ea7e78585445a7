package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/llm"
	"github.com/plangate/plangate/core/plan"
)

// OpenAI-compatible servers cache the longest identical prefix of a request, from 1,024
// tokens on, in steps of 128 tokens, and bill it as prompt_tokens_details.cached_tokens.
// prefixServer is such a server, run through the real openai-go client of `plangate chat`:
// it renders each request as a server does (the tools, then the messages in order, each as
// the JSON the client sent), counts 4 bytes as a token (an approximation: real tokenizers
// give about 3.5 to 4.5 bytes a token for English text and JSON), and answers from a
// script provider (the model's turns) with the usage a caching server would report.
const (
	bytesPerToken = 4
	cacheMinimum  = 1024 // tokens
	cacheStep     = 128  // tokens
)

// prefixCall is one request the server saw.
type prefixCall struct {
	kind          string // planning, executing, after (the call after the plan completed) or chat
	bytes, prev   int    // the rendered request, and the previous one of the session
	common        int    // bytes of the longest prefix shared with the previous one
	usage         core.Usage
	newestMessage string
}

// reuse is the share of the previous request that this one starts with.
func (c prefixCall) reuse() float64 { return float64(c.common) / float64(c.prev) }

type prefixServer struct {
	t      *testing.T
	srv    *httptest.Server
	script *llm.Script
	mu     sync.Mutex
	last   []byte
	calls  []prefixCall
}

func newPrefixServer(t *testing.T, script *llm.Script) *prefixServer {
	f := &prefixServer{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// wireRequest is what the server reads of a Chat Completions request.
type prefixRequest struct {
	Model    string            `json:"model"`
	Tools    json.RawMessage   `json:"tools"`
	Messages []json.RawMessage `json:"messages"`
}

type prefixMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Name    string `json:"name"`
}

func (f *prefixServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req prefixRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	rendered := append([]byte(nil), req.Tools...)
	var msgs []core.ChatMessage
	system := ""
	for i, raw := range req.Messages {
		rendered = append(rendered, raw...)
		var m prefixMessage
		_ = json.Unmarshal(raw, &m) // content is a string in every message plangate sends
		if i == 0 && m.Role == "system" {
			system = m.Content
		}
		msgs = append(msgs, core.ChatMessage{Role: core.Role(m.Role), Content: m.Content, Name: m.Name})
	}
	resp, err := f.script.Complete(r.Context(), core.ModelRequest{SessionID: "s", Messages: msgs})
	if err != nil {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	kind := "chat"
	switch {
	case req.Model == "plan-model":
		kind = "planning"
	case strings.Contains(system, "ACCEPTED PLAN v"):
		kind = "executing"
	}
	f.mu.Lock()
	c := prefixCall{kind: kind, bytes: len(rendered), prev: len(f.last), newestMessage: newestUser(msgs)}
	for c.common < min(len(f.last), len(rendered)) && f.last[c.common] == rendered[c.common] {
		c.common++
	}
	c.usage.Prompt = int64((len(rendered) + bytesPerToken - 1) / bytesPerToken)
	if t := int64(c.common / bytesPerToken); t >= cacheMinimum {
		c.usage.Cached = t - t%cacheStep
	}
	f.last = rendered
	f.mu.Unlock()

	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": resp.Text}
	var list []tc
	for _, call := range resp.ToolCalls {
		list = append(list, tc{ID: call.ID, Type: "function", Function: fn{Name: call.Name, Arguments: string(call.Args)}})
	}
	finish := "stop"
	if len(list) > 0 {
		msg["tool_calls"], finish = list, "tool_calls"
	}
	answer, _ := json.Marshal(msg)
	c.usage.Completion = int64(len(answer)/bytesPerToken + 1)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"finish_reason":%q,"message":%s}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		req.Model, finish, answer, c.usage.Prompt, c.usage.Completion, c.usage.Prompt+c.usage.Completion, c.usage.Cached)
}

// newestUser is the text of the newest user-role message.
func newestUser(msgs []core.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == core.RoleUser && msgs[i].Name != core.ProgressName {
			return msgs[i].Content
		}
	}
	return ""
}

// runPrefixChat types input into `plangate chat` on the server, with extra config lines.
func (f *prefixServer) runPrefixChat(t *testing.T, input, extra string) string {
	dir := t.TempDir()
	cfg := `store: {path: plangate.db}
plans: {dir: plans}
workspace: {root: workspace, seed: "${SEED}"}
llm: {provider: openai, base_url: "` + f.srv.URL + `/v1", api_key: k, model: exec-model, plan_model: plan-model, max_retries: 0}
` + extra
	for name, data := range map[string]string{"config.yaml": cfg, "input.txt": input} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return runScenario(t, dir)
}

// TestPromptPrefixCacheFriendly: over the demo's plan cycle (plan, revise, accept, the
// steps, complete) and a chat longer than agent.history_messages, each request starts
// with almost all of the previous one, so a caching server serves that part from its
// cache: at least 90% for planning, executing and chat calls, and 70% for the first
// executing call (the pinned plan enters the system prompt). The calls' usage, as the
// server reported it, is what /plan status counts.
func TestPromptPrefixCacheFriendly(t *testing.T) {
	demo, err := llm.LoadScript(filepath.Join("..", "..", "demo", "script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cycle := newPrefixServer(t, demo)
	out := cycle.runPrefixChat(t, "/plan on tidy the docs\n/plan revise also start a changelog\n/plan accept\n/plan\n", "")
	if !strings.Contains(out, "Plan v2 completed") {
		t.Fatalf("the plan cycle did not complete:\n%s", out)
	}

	const rounds = 36 // beyond agent.history_messages (40: a message and its answer each)
	var turns strings.Builder
	turns.WriteString("turns:\n")
	for i := range rounds {
		fmt.Fprintf(&turns, "  - text: \"Noted, item %d: the release notes will mention it under its own heading.\"\n", i+1)
	}
	chatScript, err := llm.ParseScript("chat", []byte(turns.String()))
	if err != nil {
		t.Fatal(err)
	}
	chat := newPrefixServer(t, chatScript)
	var input strings.Builder
	for i := range rounds {
		fmt.Fprintf(&input, "Please note item %d for the release notes: the installer now checks free disk space first.\n", i+1)
	}
	chat.runPrefixChat(t, input.String(), "")

	// Each kind's share is the mean over its calls (a chat compacting its window drops to
	// the tools and the system prompt once every tenth entry, and gains it back at once);
	// chat counts from the call whose history first reached the bound.
	floor := map[string]float64{"planning": 0.90, "executing": 0.90, "first executing": 0.70, "chat": 0.90}
	type share struct {
		sum, worst float64
		n          int
	}
	shares := map[string]*share{}
	note := func(kind string, c prefixCall) {
		s := shares[kind]
		if s == nil {
			s = &share{worst: 1}
			shares[kind] = s
		}
		s.sum, s.n, s.worst = s.sum+c.reuse(), s.n+1, min(s.worst, c.reuse())
	}
	log := func(i int, kind string, c prefixCall) {
		if c.prev == 0 {
			t.Logf("call %2d %-15s %6d bytes (the session's first)", i, kind, c.bytes)
			return
		}
		t.Logf("call %2d %-15s %6d bytes, %5.1f%% of the previous request reused, %4d of %4d prompt tokens cached",
			i, kind, c.bytes, 100*c.reuse(), c.usage.Cached, c.usage.Prompt)
	}
	var cycleBytes, chatBytes int
	for i, c := range cycle.calls {
		cycleBytes += c.bytes
		kind := c.kind
		switch {
		case c.prev == 0:
		case kind == "executing" && cycle.calls[i-1].kind != "executing":
			kind = "first executing"
		case kind == "chat":
			kind = "after completion" // the completion's summary, back in plain chat: not bounded
		}
		log(i+1, kind, c)
		if c.prev > 0 {
			note(kind, c)
		}
	}
	const bound = 40 / 2 // agent.history_messages' default, in calls of a message and an answer
	for i, c := range chat.calls {
		chatBytes += c.bytes
		log(i+1, "chat", c)
		if i >= bound {
			note("chat", c)
		}
	}
	t.Logf("plan cycle: %d calls, %d prompt bytes; chat: %d calls, %d prompt bytes", len(cycle.calls), cycleBytes, len(chat.calls), chatBytes)
	for kind, s := range shares {
		t.Logf("%-16s %2d calls, %5.1f%% reused on average, %5.1f%% at worst", kind, s.n, 100*s.sum/float64(s.n), 100*s.worst)
	}
	for kind, min := range floor {
		s, ok := shares[kind]
		switch {
		case !ok:
			t.Errorf("no %s call was made", kind)
		case s.sum/float64(s.n) < min:
			t.Errorf("%s calls reused %.1f%% of the previous request as their prefix, want at least %.0f%%", kind, 100*s.sum/float64(s.n), 100*min)
		}
	}

	// What the server reported is what plangate counted: the conversation's calls, and
	// v2's (from the revision to the completion).
	var all, v2 plan.Tokens
	for _, c := range cycle.calls {
		all = all.Add(c.usage.Tokens())
		revised := strings.HasPrefix(c.newestMessage, "[PLAN_DECISION]: rejected") || !v2.IsZero()
		if revised && c.kind != "chat" { // the completion's summary is the conversation's
			v2 = v2.Add(c.usage.Tokens())
		}
	}
	t.Logf("plan cycle: %d prompt tokens, %d cached (%.0f%%); v2: %s", all.Prompt, all.Cached, 100*float64(all.Cached)/float64(all.Prompt), v2.Words())
	want := "last plan: " + v2.Words() + " · this conversation: " + all.Words()
	if !strings.Contains(out, want) {
		t.Errorf("/plan status lacks %q:\n%s", want, lastBlock(out))
	}
}

// lastBlock is the end of a transcript, for a failure message.
func lastBlock(out string) string {
	if i := bytes.LastIndex([]byte(out), []byte("phase:")); i >= 0 {
		return out[i:]
	}
	return out
}
