package llm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testKey is a fake API key; tests check it never leaves in an error or a log line.
const testKey = "sk-test-0123456789abcdef"

// fakeReply is one scripted answer of the fake endpoint.
type fakeReply struct {
	status int               // 0 = 200
	header map[string]string // extra response headers
	body   string
	hang   bool // hold the request until the client gives up
}

// wireRequest is a Chat Completions request as the fake received it.
type wireRequest struct {
	Model       string        `json:"model"`
	Temperature *float64      `json:"temperature"`
	Messages    []wireMessage `json:"messages"`
	Tools       []wireTool    `json:"tools"`

	header http.Header
	path   string
	raw    map[string]json.RawMessage
}

type wireMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	Name       *string    `json:"name"`
	ToolCallID string     `json:"tool_call_id"`
	ToolCalls  []wireCall `json:"tool_calls"`
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// fakeOpenAI is a local OpenAI-compatible endpoint that answers from a script of replies
// (the last one repeats) and records every request.
type fakeOpenAI struct {
	t    *testing.T
	srv  *httptest.Server
	done chan struct{}

	mu      sync.Mutex
	replies []fakeReply
	reqs    []wireRequest
}

func newFakeOpenAI(t *testing.T, replies ...fakeReply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{t: t, replies: replies, done: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.done) }) // runs first: releases hanging handlers
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := wireRequest{header: r.Header.Clone(), path: r.URL.Path}
	if err := json.Unmarshal(data, &req); err != nil {
		f.t.Errorf("fake endpoint: request body is not JSON: %v", err)
	}
	_ = json.Unmarshal(data, &req.raw)

	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	var rep fakeReply
	switch {
	case len(f.replies) > 1:
		rep, f.replies = f.replies[0], f.replies[1:]
	case len(f.replies) == 1:
		rep = f.replies[0]
	default:
		rep = fakeReply{status: 500, body: `{"error":{"message":"no reply scripted"}}`}
	}
	f.mu.Unlock()

	if rep.hang {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.status != 0 {
		w.WriteHeader(rep.status)
	}
	_, _ = io.WriteString(w, rep.body)
}

// requests returns what the fake received so far.
func (f *fakeOpenAI) requests() []wireRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wireRequest(nil), f.reqs...)
}

// url is the base URL to configure, ending in /v1 as real servers do.
func (f *fakeOpenAI) url() string { return f.srv.URL + "/v1" }

// provider builds the real provider against the fake, with tiny backoff steps.
func (f *fakeOpenAI) provider(cfg OpenAIConfig) *OpenAI {
	f.t.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = f.url()
	}
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	o, err := NewOpenAI(cfg, nil)
	if err != nil {
		f.t.Fatalf("NewOpenAI: %v", err)
	}
	o.baseDelay = time.Millisecond
	return o
}

// completion is a 200 answer whose first choice carries message (a JSON object).
func completion(finish, message string) fakeReply {
	return fakeReply{body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model",` +
		`"choices":[{"index":0,"finish_reason":"` + finish + `","message":` + message + `}],` +
		`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`}
}

func textReply(text string) fakeReply {
	return completion("stop", `{"role":"assistant","content":`+strconv.Quote(text)+`}`)
}

// toolCallsReply answers with tool calls given as JSON objects.
func toolCallsReply(calls ...string) fakeReply {
	list := "["
	for i, c := range calls {
		if i > 0 {
			list += ","
		}
		list += c
	}
	return completion("tool_calls", `{"role":"assistant","content":null,"tool_calls":`+list+`]}`)
}

// call renders a tool call; typ "" leaves "type" out as some servers do.
func call(id, typ, name, args string) string {
	t := ""
	if typ != "" {
		t = `"type":` + strconv.Quote(typ) + `,`
	}
	return fmt.Sprintf(`{"id":%q,%s"function":{"name":%q,"arguments":%s}}`, id, t, name, strconv.Quote(args))
}

func errorReply(status int, body string, header map[string]string) fakeReply {
	return fakeReply{status: status, body: body, header: header}
}
