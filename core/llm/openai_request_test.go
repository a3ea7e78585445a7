package llm

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

func TestOpenAIModelChoice(t *testing.T) {
	tests := []struct {
		name      string
		planModel string
		planning  bool
		want      string
	}{
		{"planning uses plan_model", "big-planner", true, "big-planner"},
		{"executing uses model", "big-planner", false, "test-model"},
		{"planning without plan_model", "", true, "test-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, textReply("ok"))
			req := userRequest("hi")
			req.Planning = tt.planning
			if _, err := fake.provider(OpenAIConfig{PlanModel: tt.planModel}).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := fake.requests()[0].Model; got != tt.want {
				t.Errorf("model = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenAITemperature(t *testing.T) {
	zero, warm := 0.0, 0.7
	tests := []struct {
		name string
		temp *float64
		want string // raw JSON, "" = absent
	}{
		{"unset", nil, ""},
		{"zero is sent", &zero, "0"},
		{"set", &warm, "0.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, textReply("ok"))
			if _, err := fake.provider(OpenAIConfig{Temperature: tt.temp}).Complete(context.Background(), userRequest("hi")); err != nil {
				t.Fatal(err)
			}
			raw, ok := fake.requests()[0].raw["temperature"]
			if got := string(raw); ok != (tt.want != "") || got != tt.want {
				t.Errorf("temperature = %q (present %v), want %q", got, ok, tt.want)
			}
		})
	}
}

func TestOpenAIUserNames(t *testing.T) {
	tests := []struct {
		name, sender string
		sent         bool
	}{
		{"plain", "alice", true},
		{"digits, dash and underscore", "U0123_ab-c", true},
		{"injected decisions", "plangate", true},
		{"empty", "", false},
		{"space", "Alice Smith", false},
		{"non-ASCII", "Zoë", false},
		{"too long", strings.Repeat("a", 65), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, textReply("ok"))
			req := core.ModelRequest{Messages: []core.ChatMessage{{Role: core.RoleUser, Name: tt.sender, Content: "hi"}}}
			if _, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			m := fake.requests()[0].Messages[0] // no system prompt: the user message is first
			if got := m.Name != nil; got != tt.sent {
				t.Errorf("name sent = %v (%s), want %v", got, deref(m.Name), tt.sent)
			}
			if tt.sent && *m.Name != tt.sender {
				t.Errorf("name = %q, want %q", *m.Name, tt.sender)
			}
			if deref(m.Content) != "hi" {
				t.Errorf("content = %s", deref(m.Content))
			}
		})
	}
}

func TestOpenAIAssistantHistory(t *testing.T) {
	calls := []core.ToolCall{
		{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)},
		{ID: "c2", Name: "plan_status"}, // no args recorded
	}
	tests := []struct {
		name    string
		msg     core.ChatMessage
		content string // "<nil>" = left out
		args    []string
	}{
		{"text only", core.ChatMessage{Role: core.RoleAssistant, Content: "done"}, "done", nil},
		{"empty text", core.ChatMessage{Role: core.RoleAssistant}, "", nil},
		{"calls only", core.ChatMessage{Role: core.RoleAssistant, ToolCalls: calls}, "<nil>", []string{`{"path":"a"}`, `{}`}},
		{"text and calls", core.ChatMessage{Role: core.RoleAssistant, Content: "Looking.", ToolCalls: calls[:1]}, "Looking.", []string{`{"path":"a"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, textReply("ok"))
			req := core.ModelRequest{Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}, tt.msg}}
			if _, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			a := fake.requests()[0].Messages[1]
			if a.Role != "assistant" || deref(a.Content) != tt.content {
				t.Errorf("assistant message = %s %q, want content %q", a.Role, deref(a.Content), tt.content)
			}
			if len(a.ToolCalls) != len(tt.args) {
				t.Fatalf("sent %d tool calls, want %d", len(a.ToolCalls), len(tt.args))
			}
			for i, c := range a.ToolCalls {
				if c.Type != "function" || c.ID != calls[i].ID || c.Function.Name != calls[i].Name || c.Function.Arguments != tt.args[i] {
					t.Errorf("call %d = %+v", i, c)
				}
			}
		})
	}
}

func TestOpenAIRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  core.ModelRequest
		want string
	}{
		{"unknown role", core.ModelRequest{Messages: []core.ChatMessage{{Role: "system", Content: "x"}}}, `message 0 has unknown role "system"`},
		{"bad schema", core.ModelRequest{Tools: []core.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}}, `tool "broken" has a parameter schema that is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, textReply("ok"))
			_, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if n := len(fake.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A failing llm.plan_model never blocks planning: each kind of failure gets one attempt,
// then the same request goes to llm.model and the response says why; for planDownFor the
// plan model is not asked again, and after it, it is.
func TestOpenAIPlanModelFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  fakeReply
		words string
	}{
		{"unknown model", fakeReply{status: 404, body: `{"error":{"message":"The model big-planner does not exist"}}`}, "404"},
		{"refused key", fakeReply{status: 401, body: `{"error":{"message":"invalid api key for this model"}}`}, "401"},
		{"server error", fakeReply{status: 503, body: `{"error":{"message":"overloaded"}}`}, "503"},
		{"timeout", fakeReply{hang: true}, "did not answer within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, tc.fail, textReply("planned by the main model"), textReply("again"), textReply("plan model back"))
			o := fake.provider(OpenAIConfig{PlanModel: "big-planner", MaxRetries: 3, Timeout: 200 * time.Millisecond})
			now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
			o.now = func() time.Time { return now }
			req := userRequest("plan it")
			req.Planning = true
			resp, err := o.Complete(context.Background(), req)
			if err != nil || resp.Text != "planned by the main model" {
				t.Fatalf("fallback: %+v, %v", resp, err)
			}
			if !strings.Contains(resp.Fallback, "llm.plan_model big-planner failed") || !strings.Contains(resp.Fallback, tc.words) ||
				!strings.Contains(resp.Fallback, "planning uses llm.model test-model") || strings.Contains(resp.Fallback, testKey) {
				t.Errorf("Fallback = %q", resp.Fallback)
			}
			reqs := fake.requests()
			if len(reqs) != 2 || reqs[0].Model != "big-planner" || reqs[1].Model != "test-model" {
				t.Fatalf("models asked: %v, want big-planner once, then test-model", models(reqs))
			}

			// Within planDownFor the plan model is left alone.
			now = now.Add(planDownFor - time.Second)
			if resp, err := o.Complete(context.Background(), req); err != nil || resp.Text != "again" || resp.Fallback == "" {
				t.Fatalf("within the pause: %+v, %v", resp, err)
			}
			if reqs := fake.requests(); len(reqs) != 3 || reqs[2].Model != "test-model" {
				t.Fatalf("models asked: %v", models(reqs))
			}
			// After it, the plan model is asked again, and a success clears the fallback.
			now = now.Add(2 * time.Second)
			if resp, err := o.Complete(context.Background(), req); err != nil || resp.Text != "plan model back" || resp.Fallback != "" {
				t.Fatalf("after the pause: %+v, %v", resp, err)
			}
			if reqs := fake.requests(); len(reqs) != 4 || reqs[3].Model != "big-planner" {
				t.Fatalf("models asked: %v", models(reqs))
			}
		})
	}
}

// A cancelled planning call is not a failure of the plan model: nothing falls back.
func TestOpenAIPlanModelCancelledDoesNotFallBack(t *testing.T) {
	fake := newFakeOpenAI(t, fakeReply{hang: true})
	o := fake.provider(OpenAIConfig{PlanModel: "big-planner"})
	ctx, cancel := context.WithCancel(context.Background())
	req := userRequest("plan it")
	req.Planning = true
	done := make(chan error, 1)
	go func() { _, err := o.Complete(ctx, req); done <- err }()
	for len(fake.requests()) == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if reqs := fake.requests(); len(reqs) != 1 {
		t.Fatalf("models asked: %v, want the plan model only", models(reqs))
	}
	if _, down := o.planModelDown(); down {
		t.Fatal("a cancelled call counts as the plan model's failure")
	}
}

func models(reqs []wireRequest) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Model
	}
	return out
}
