package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

var readFileSpec = core.ToolSpec{
	Name:        "read_file",
	Description: "Read a file of the workspace.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"],"additionalProperties":false}`),
	Kind:        core.ToolReadOnly,
}

var planStatusSpec = core.ToolSpec{Name: "plan_status", Description: "Show the plan.", Kind: core.ToolPlan}

// TestOpenAIToolLoop drives the real client through tool call -> tool result -> final text
// and checks what the endpoint received at each step.
func TestOpenAIToolLoop(t *testing.T) {
	fake := newFakeOpenAI(t,
		toolCallsReply(call("call_a", "function", "read_file", `{"path":"README.md"}`)),
		textReply("The README says hello."),
	)
	o := fake.provider(OpenAIConfig{})
	ctx := context.Background()
	req := core.ModelRequest{
		SessionID: "s1",
		System:    "You are plangate's agent.",
		Messages:  []core.ChatMessage{{Role: core.RoleUser, Name: "alice", Content: "what does the README say?"}},
		Tools:     []core.ToolSpec{readFileSpec, planStatusSpec},
	}
	resp, err := o.Complete(ctx, req)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_a" || resp.ToolCalls[0].Name != "read_file" ||
		string(resp.ToolCalls[0].Args) != `{"path":"README.md"}` {
		t.Fatalf("first call: got %+v", resp)
	}
	// The engine appends the assistant's call and the tool's result, then asks again.
	req.Messages = append(req.Messages,
		core.ChatMessage{Role: core.RoleAssistant, ToolCalls: resp.ToolCalls},
		core.ChatMessage{Role: core.RoleTool, ToolCallID: "call_a", Name: "read_file", Content: "1\thello"},
	)
	resp, err = o.Complete(ctx, req)
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if resp.Text != "The README says hello." || len(resp.ToolCalls) != 0 {
		t.Fatalf("second call: got %+v", resp)
	}

	reqs := fake.requests()
	if len(reqs) != 2 {
		t.Fatalf("endpoint got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.path != "/v1/chat/completions" {
			t.Errorf("request %d went to %s", i+1, r.path)
		}
		if got := r.header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("request %d Authorization = %q, want the key as Bearer", i+1, got)
		}
		if r.Model != "test-model" {
			t.Errorf("request %d model = %q", i+1, r.Model)
		}
		if _, ok := r.raw["temperature"]; ok {
			t.Errorf("request %d sent a temperature though none is configured", i+1)
		}
		if len(r.Messages) == 0 || r.Messages[0].Role != "system" || deref(r.Messages[0].Content) != "You are plangate's agent." {
			t.Errorf("request %d does not start with the system prompt: %+v", i+1, r.Messages)
		}
		if len(r.Tools) != 2 {
			t.Fatalf("request %d offered %d tools, want 2", i+1, len(r.Tools))
		}
		rf := r.Tools[0]
		if rf.Type != "function" || rf.Function.Name != "read_file" || rf.Function.Description != readFileSpec.Description ||
			!bytes.Equal(rf.Function.Parameters, readFileSpec.Parameters) {
			t.Errorf("request %d read_file tool = %+v, want its schema verbatim", i+1, rf)
		}
		if ps := r.Tools[1].Function; ps.Name != "plan_status" || string(ps.Parameters) != string(emptySchema) {
			t.Errorf("request %d plan_status tool = %+v, want the empty object schema", i+1, ps)
		}
	}
	msgs := reqs[1].Messages
	if len(msgs) != 4 {
		t.Fatalf("second request has %d messages, want system, user, assistant, tool: %+v", len(msgs), msgs)
	}
	if u := msgs[1]; u.Role != "user" || deref(u.Name) != "alice" || deref(u.Content) != "what does the README say?" {
		t.Errorf("user message = %+v", u)
	}
	a := msgs[2]
	if a.Role != "assistant" || a.Content != nil || len(a.ToolCalls) != 1 {
		t.Fatalf("assistant message = %+v, want one tool call and no content", a)
	}
	if c := a.ToolCalls[0]; c.ID != "call_a" || c.Type != "function" || c.Function.Name != "read_file" || c.Function.Arguments != `{"path":"README.md"}` {
		t.Errorf("re-sent tool call = %+v, want it with \"type\":\"function\"", c)
	}
	if tm := msgs[3]; tm.Role != "tool" || tm.ToolCallID != "call_a" || deref(tm.Content) != "1\thello" {
		t.Errorf("tool message = %+v", tm)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestOpenAIToolCallShapes covers what real servers send back.
func TestOpenAIToolCallShapes(t *testing.T) {
	tests := []struct {
		name  string
		reply fakeReply
		text  string
		calls []core.ToolCall
	}{
		{
			name:  "with type",
			reply: toolCallsReply(call("c1", "function", "read_file", `{"path":"a"}`)),
			calls: []core.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)}},
		},
		{
			name:  "without type",
			reply: toolCallsReply(call("c1", "", "read_file", `{"path":"a"}`)),
			calls: []core.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)}},
		},
		{
			name: "parallel calls, mixed type",
			reply: toolCallsReply(
				call("c1", "function", "read_file", `{"path":"a"}`),
				call("c2", "", "read_file", `{"path":"b"}`),
				call("c3", "function", "plan_status", `{}`),
			),
			calls: []core.ToolCall{
				{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)},
				{ID: "c2", Name: "read_file", Args: json.RawMessage(`{"path":"b"}`)},
				{ID: "c3", Name: "plan_status", Args: json.RawMessage(`{}`)},
			},
		},
		{
			name:  "malformed arguments become a JSON string",
			reply: toolCallsReply(call("c1", "function", "read_file", `{"path": "a"`)),
			calls: []core.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`"{\"path\": \"a\""`)}},
		},
		{
			name:  "empty arguments mean none",
			reply: toolCallsReply(call("c1", "function", "plan_status", ``)),
			calls: []core.ToolCall{{ID: "c1", Name: "plan_status", Args: json.RawMessage(`{}`)}},
		},
		{
			name:  "arguments sent as an object",
			reply: toolCallsReply(`{"id":"c1","type":"function","function":{"name":"read_file","arguments":{"path":"a"}}}`),
			calls: []core.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)}},
		},
		{
			name:  "missing ids are made up",
			reply: toolCallsReply(call("", "", "read_file", `{"path":"a"}`), call("", "", "read_file", `{"path":"b"}`)),
			calls: []core.ToolCall{
				{ID: "*", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)},
				{ID: "*", Name: "read_file", Args: json.RawMessage(`{"path":"b"}`)},
			},
		},
		{
			name:  "text and a call",
			reply: completion("tool_calls", `{"role":"assistant","content":"Let me look.","tool_calls":[`+call("c1", "function", "plan_status", "{}")+`]}`),
			text:  "Let me look.",
			calls: []core.ToolCall{{ID: "c1", Name: "plan_status", Args: json.RawMessage(`{}`)}},
		},
		{
			name:  "refusal only",
			reply: completion("stop", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`),
			text:  "I can't help with that.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, tt.reply)
			resp, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), userRequest("go"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.text {
				t.Errorf("text = %q, want %q", resp.Text, tt.text)
			}
			if len(resp.ToolCalls) != len(tt.calls) {
				t.Fatalf("got %d calls %+v, want %d", len(resp.ToolCalls), resp.ToolCalls, len(tt.calls))
			}
			ids := map[string]bool{}
			for i, c := range resp.ToolCalls {
				w := tt.calls[i]
				if w.ID == "*" { // made up: must be unique and look like a call id
					if !strings.HasPrefix(c.ID, "call_") || len(c.ID) < 10 || ids[c.ID] {
						t.Errorf("call %d: made-up id %q is not a fresh call id", i, c.ID)
					}
					ids[c.ID] = true
					w.ID = c.ID
				}
				if c.ID != w.ID || c.Name != w.Name || string(c.Args) != string(w.Args) {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Args, w.ID, w.Name, w.Args)
				}
				if !json.Valid(c.Args) {
					t.Errorf("call %d args %q are not valid JSON: the transcript could not store them", i, c.Args)
				}
			}
		})
	}
}

func userRequest(text string) core.ModelRequest {
	return core.ModelRequest{
		SessionID: "s",
		Messages:  []core.ChatMessage{{Role: core.RoleUser, Content: text}},
		Tools:     []core.ToolSpec{readFileSpec},
	}
}

// TestOpenAIMalformedArgumentsCanBeRetried: a call with broken JSON reaches the engine as
// something its strict decoding refuses, the history shows the model what it wrote, and
// the model's corrected call goes through.
func TestOpenAIMalformedArgumentsCanBeRetried(t *testing.T) {
	bad := `{"path": "README.md"` // cut short
	fake := newFakeOpenAI(t,
		toolCallsReply(call("c1", "function", "read_file", bad)),
		toolCallsReply(call("c2", "function", "read_file", `{"path":"README.md"}`)),
	)
	o := fake.provider(OpenAIConfig{})
	ctx := context.Background()
	req := userRequest("read the README")
	resp, err := o.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		Path string `json:"path"`
	}
	dec := json.NewDecoder(bytes.NewReader(resp.ToolCalls[0].Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err == nil {
		t.Fatalf("malformed arguments decoded without error into %+v: the model would never learn", args)
	}
	req.Messages = append(req.Messages,
		core.ChatMessage{Role: core.RoleAssistant, ToolCalls: resp.ToolCalls},
		core.ChatMessage{Role: core.RoleTool, ToolCallID: "c1", Content: "error: read_file: reading the arguments: ..."},
	)
	resp, err = o.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(resp.ToolCalls[0].Args, &args); err != nil || args.Path != "README.md" {
		t.Fatalf("corrected call: %s, %v", resp.ToolCalls[0].Args, err)
	}
	resent := fake.requests()[1].Messages[1].ToolCalls[0] // user, assistant, tool
	if resent.Function.Arguments != bad {
		t.Errorf("history re-sent arguments %q, want what the model wrote: %q", resent.Function.Arguments, bad)
	}
}

// TestOpenAIIgnoresEnvironment: OPENAI_* variables must not redirect the client, replace
// its key or add headers; the config is the only source.
func TestOpenAIIgnoresEnvironment(t *testing.T) {
	decoy := newFakeOpenAI(t, textReply("decoy"))
	t.Setenv("OPENAI_BASE_URL", decoy.url())
	t.Setenv("OPENAI_API_KEY", "sk-env-key-should-not-be-used")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-key-should-not-be-used")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Env-Header: leaked")

	for _, key := range []string{testKey, ""} {
		fake := newFakeOpenAI(t, textReply("real"))
		o, err := NewOpenAI(OpenAIConfig{BaseURL: fake.url(), APIKey: key, Model: "m"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := o.Complete(context.Background(), userRequest("hi"))
		if err != nil || resp.Text != "real" {
			t.Fatalf("key %q: got %q, %v; want the configured endpoint's answer", key, resp.Text, err)
		}
		h := fake.requests()[0].header
		want := ""
		if key != "" {
			want = "Bearer " + key
		}
		if got := h.Get("Authorization"); got != want {
			t.Errorf("key %q: Authorization = %q, want %q", key, got, want)
		}
		for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Env-Header"} {
			if v := h.Get(name); v != "" {
				t.Errorf("key %q: header %s = %q came from the environment", key, name, v)
			}
		}
	}
	if n := len(decoy.requests()); n != 0 {
		t.Errorf("OPENAI_BASE_URL received %d requests", n)
	}
}

func TestNewOpenAIConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  OpenAIConfig
		want string
	}{
		{"no model", OpenAIConfig{}, "llm.model is empty"},
		{"negative retries", OpenAIConfig{Model: "m", MaxRetries: -1}, "llm.max_retries"},
		{"negative timeout", OpenAIConfig{Model: "m", Timeout: -1}, "must not be negative"},
		{"no scheme", OpenAIConfig{Model: "m", BaseURL: "localhost:11434/v1"}, "llm.base_url"},
		{"ftp", OpenAIConfig{Model: "m", BaseURL: "ftp://host/v1"}, "llm.base_url"},
		{"unparsable, with a secret", OpenAIConfig{Model: "m", BaseURL: "http://u:" + testKey + "@[::1/v1"}, "llm.base_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewOpenAI(tt.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error repeats the secret: %v", err)
			}
		})
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "m"}, nil); err != nil {
		t.Errorf("the default base URL: %v", err)
	}
}

// TestOpenAILogs: one debug line per call with model, duration and token usage; the key
// appears in no log line, successful or not.
func TestOpenAILogs(t *testing.T) {
	fake := newFakeOpenAI(t, textReply("ok"), errorReply(http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: `+testKey+`"}}`, nil))
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o, err := NewOpenAI(OpenAIConfig{BaseURL: fake.url(), APIKey: testKey, Model: "test-model"}, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Complete(context.Background(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Complete(context.Background(), userRequest("hi")); err == nil {
		t.Fatal("the 401 did not fail")
	}
	out := buf.String()
	for _, want := range []string{"msg=\"model call\"", "model=test-model", "duration=", "prompt_tokens=11", "completion_tokens=7", "total_tokens=18", "refused the API key"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, testKey) || strings.Contains(out, fake.srv.URL+"/v1") {
		t.Errorf("log contains the key or the full URL:\n%s", out)
	}
}

// TestOpenAIAssistantHistory: every shape of assistant entry goes back in a form strict
// servers accept: content unless there are only tool calls, and every call typed.
// TestOpenAIRequestErrors: a request that cannot be encoded fails before anything is sent.
