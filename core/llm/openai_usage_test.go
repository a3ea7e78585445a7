package llm

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestOpenAIUsage: the call's usage, cached tokens included, comes back on the response
// from both readers (fastAnswer and openai-go's, which takes the bodies fastAnswer
// declines); a server that reports no usage gives zero, which the engine counts as not
// reported.
func TestOpenAIUsage(t *testing.T) {
	const usage = `"usage":{"prompt_tokens":2048,"completion_tokens":12,"total_tokens":2060,"prompt_tokens_details":{"cached_tokens":1920}}`
	tests := []struct {
		name, body string
		fast       bool
		want       core.Usage
	}{
		{"fast path", `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],` + usage + `}`, true,
			core.Usage{Prompt: 2048, Cached: 1920, Completion: 12}},
		{"openai-go path", `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2048,"completion_tokens":12,"total_tokens":2060.0,"prompt_tokens_details":{"cached_tokens":1920}}}`, false,
			core.Usage{Prompt: 2048, Cached: 1920, Completion: 12}},
		{"no details", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":30,"completion_tokens":4,"total_tokens":34}}`, true,
			core.Usage{Prompt: 30, Completion: 4}},
		{"no usage", `{"choices":[{"message":{"content":"a"}}]}`, true, core.Usage{}},
		{"null usage", `{"choices":[{"message":{"content":"a"}}],"usage":null}`, true, core.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := fastAnswer([]byte(tt.body)); ok != tt.fast {
				t.Fatalf("fastAnswer took it: %v, want %v", ok, tt.fast)
			}
			fake := newFakeOpenAI(t, fakeReply{body: tt.body})
			resp, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tt.want {
				t.Errorf("usage %+v, want %+v", resp.Usage, tt.want)
			}
		})
	}
}
