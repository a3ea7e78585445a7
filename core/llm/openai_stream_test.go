package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// sseServer is a local streaming Chat Completions endpoint: each request gets the next
// script of events (the last repeats), written as text/event-stream with a flush after
// each, and its body is recorded.
type sseServer struct {
	mu      sync.Mutex
	scripts [][]string // data: payloads; "" ends the answer without [DONE] (a broken stream)
	bodies  []map[string]json.RawMessage
	status  int // non-zero: answer every request with this status and a JSON error
}

func (s *sseServer) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]json.RawMessage
	_ = json.Unmarshal(data, &body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	script := s.scripts[0]
	if len(s.scripts) > 1 {
		s.scripts = s.scripts[1:]
	}
	status := s.status
	s.mu.Unlock()
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"the key is wrong","code":"invalid_api_key"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, ev := range script {
		if ev == "" {
			return // cut off: no [DONE]
		}
		_, _ = io.WriteString(w, "data: "+ev+"\n\n")
		fl.Flush()
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func chunk(delta string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

func finish(reason string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

const usageChunk = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`

func newSSE(t *testing.T, s *sseServer) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: testKey, Model: "m", MaxRetries: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.baseDelay = time.Millisecond
	return o
}

func TestCompleteStream(t *testing.T) {
	text := []string{chunk(`{"role":"assistant","content":""}`), chunk(`{"content":"Hel"}`), chunk(`{"content":"lo, "}`),
		chunk(`{"content":"world."}`), finish("stop"), usageChunk}
	calls := []string{
		chunk(`{"role":"assistant","content":"Let me look."}`),
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"README.md\"}"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"list_files","arguments":"{}"}}]}`),
		finish("tool_calls"),
	}
	tests := []struct {
		name      string
		scripts   [][]string
		wantShown []string
		want      core.ModelResponse
		wantReqs  int
	}{
		{"text in chunks", [][]string{text}, []string{"Hel", "Hello, ", "Hello, world."},
			core.ModelResponse{Text: "Hello, world.", Usage: core.Usage{Prompt: 5, Completion: 3}}, 1},
		{"tool calls joined by index", [][]string{calls}, []string{"Let me look."},
			core.ModelResponse{Text: "Let me look.", ToolCalls: []core.ToolCall{
				{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
				{ID: "call_2", Name: "list_files", Args: json.RawMessage(`{}`)}}}, 1},
		{"a broken stream is retried from its first word", [][]string{{chunk(`{"content":"Hel"}`), ""}, text},
			[]string{"Hel", "Hel", "Hello, ", "Hello, world."}, core.ModelResponse{Text: "Hello, world.", Usage: core.Usage{Prompt: 5, Completion: 3}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sseServer{scripts: tt.scripts}
			o := newSSE(t, s)
			var shown []string
			resp, err := o.CompleteStream(context.Background(), core.ModelRequest{Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}}},
				func(text string) { shown = append(shown, text) })
			if err != nil {
				t.Fatalf("CompleteStream: %v", err)
			}
			if strings.Join(shown, "|") != strings.Join(tt.wantShown, "|") {
				t.Errorf("shown %q, want %q", shown, tt.wantShown)
			}
			if resp.Text != tt.want.Text || len(resp.ToolCalls) != len(tt.want.ToolCalls) {
				t.Fatalf("response %+v, want %+v", resp, tt.want)
			}
			for i, c := range tt.want.ToolCalls {
				g := resp.ToolCalls[i]
				if g.ID != c.ID || g.Name != c.Name || string(g.Args) != string(c.Args) {
					t.Errorf("call %d = %+v (args %s), want %+v (args %s)", i, g, g.Args, c, c.Args)
				}
			}
			if resp.Usage != tt.want.Usage {
				t.Errorf("usage %+v, want %+v (the last chunk's)", resp.Usage, tt.want.Usage)
			}
			if len(s.bodies) != tt.wantReqs {
				t.Fatalf("%d requests, want %d", len(s.bodies), tt.wantReqs)
			}
			b := s.bodies[0]
			if string(b["stream"]) != "true" || string(b["stream_options"]) != `{"include_usage":true}` || string(b["model"]) != `"m"` {
				t.Errorf("request body: stream %s, stream_options %s, model %s", b["stream"], b["stream_options"], b["model"])
			}
		})
	}
}

func TestCompleteStreamFailures(t *testing.T) {
	t.Run("a server that ignores stream answers whole", func(t *testing.T) {
		fake := newFakeOpenAI(t, textReply("All at once."))
		o := fake.provider(OpenAIConfig{})
		var shown []string
		resp, err := o.CompleteStream(context.Background(), core.ModelRequest{}, func(s string) { shown = append(shown, s) })
		if err != nil || resp.Text != "All at once." || len(shown) != 1 || shown[0] != "All at once." {
			t.Fatalf("resp %+v, err %v, shown %q", resp, err, shown)
		}
	})
	t.Run("refused key before the stream", func(t *testing.T) {
		s := &sseServer{scripts: [][]string{nil}, status: http.StatusUnauthorized}
		o := newSSE(t, s)
		called := false
		_, err := o.CompleteStream(context.Background(), core.ModelRequest{}, func(string) { called = true })
		if err == nil || !strings.Contains(err.Error(), "refused the API key (401)") || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err = %v", err)
		}
		if called || len(s.bodies) != 1 {
			t.Errorf("text shown %v, requests %d (a 401 is not retried)", called, len(s.bodies))
		}
	})
	t.Run("an error event mid-stream", func(t *testing.T) {
		s := &sseServer{scripts: [][]string{{chunk(`{"content":"Hel"}`), `{"error":{"message":"upstream overloaded"}}`}}}
		o := newSSE(t, s)
		_, err := o.CompleteStream(context.Background(), core.ModelRequest{}, func(string) {})
		if err == nil || !strings.Contains(err.Error(), "reported an error while answering: upstream overloaded") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("broken every time", func(t *testing.T) {
		s := &sseServer{scripts: [][]string{{chunk(`{"content":"Hel"}`), ""}}}
		o := newSSE(t, s)
		_, err := o.CompleteStream(context.Background(), core.ModelRequest{}, func(string) {})
		if err == nil || !strings.Contains(err.Error(), "broke off its answer") || len(s.bodies) != 2 {
			t.Fatalf("err = %v after %d requests (want 2: one retry)", err, len(s.bodies))
		}
	})
}
