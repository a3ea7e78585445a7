package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// benchRequest is a turn of realistic size: a 3 KB system prompt, 24 transcript entries
// with tool calls and results, and eleven tools with schemas.
func benchRequest() core.ModelRequest {
	req := core.ModelRequest{SessionID: "bench", Planning: true, System: strings.Repeat("You are plangate's agent. ", 120)}
	for i := range 8 {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			core.ChatMessage{Role: core.RoleUser, Name: "alice", Content: "please look at file number " + fmt.Sprint(i)},
			core.ChatMessage{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: id, Name: "read_file", Args: json.RawMessage(`{"path":"docs/file.md","offset":1,"limit":200}`)}}},
			core.ChatMessage{Role: core.RoleTool, ToolCallID: id, Name: "read_file", Content: strings.Repeat("1\tsome file content line\n", 40)},
		)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"workspace-relative path"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)
	for _, name := range []string{"enter_plan_mode", "exit_plan_mode", "update_plan", "ask_user_question", "plan_status",
		"read_file", "list_files", "search_files", "write_file", "edit_file", "run_command"} {
		req.Tools = append(req.Tools, core.ToolSpec{Name: name, Description: "The " + name + " tool, described for the model in a sentence or two.", Parameters: schema})
	}
	return req
}

// BenchmarkOpenAIComplete measures the provider with the real client against an instant
// loopback endpoint answering one tool call. ns/op is the whole call; loopback-ns/call is
// a bare HTTP POST of the same request bytes with the same client, and provider-ns/call
// the difference: what the provider and openai-go add per model call.
func BenchmarkOpenAIComplete(b *testing.B) {
	answer := []byte(toolCallsReply(call("call_x", "function", "read_file", `{"path":"README.md"}`)).body)
	var lastBody atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		lastBody.Store(&body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "m", Timeout: time.Minute, MaxRetries: 2, HTTPClient: hc}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	ctx := context.Background()
	check := func() {
		resp, err := o.Complete(ctx, req)
		if err != nil || len(resp.ToolCalls) != 1 {
			b.Fatalf("Complete: %+v, %v", resp, err)
		}
	}
	check() // warm the connection, and capture the request bytes for the baseline

	b.ReportAllocs()
	for b.Loop() {
		check()
	}
	perCall := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/perCall, "calls/s")

	body := *lastBody.Load()
	n := min(b.N, 2000)
	start := time.Now()
	for range n {
		res, err := hc.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	loopback := float64(time.Since(start).Nanoseconds()) / float64(n)
	b.ReportMetric(loopback, "loopback-ns/call")
	b.ReportMetric(perCall-loopback, "provider-ns/call")
	b.ReportMetric(float64(len(body)), "request-bytes")
}

// BenchmarkOpenAIBody is building the request body of benchRequest alone: encoding/json
// on a struct as before openai_encode.go (legacy), and the appended bytes with the tools
// and system prompt from the caches (appended).
func BenchmarkOpenAIBody(b *testing.B) {
	cfg := OpenAIConfig{Model: "m", PlanModel: "planner"}
	req := benchRequest()
	b.Run("legacy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := legacyBody(cfg, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appended", func(b *testing.B) {
		o, err := NewOpenAI(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := o.body(req, req.Planning && o.cfg.PlanModel != ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpenAIAnswer is reading a completion with one tool call: openai-go's decoding
// into a ChatCompletion as before fastAnswer (openai-go), and fastAnswer (fast).
func BenchmarkOpenAIAnswer(b *testing.B) {
	raw := []byte(toolCallsReply(call("call_x", "function", "read_file", `{"path":"README.md"}`)).body)
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a, err := slowAnswer(raw); err != nil || len(a.first.calls) != 1 {
				b.Fatal(a, err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a, ok := fastAnswer(raw); !ok || len(a.first.calls) != 1 {
				b.Fatal(a, ok)
			}
		}
	})
}
