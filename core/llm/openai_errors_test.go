package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// checkErrorLine fails if a model error is not one clean line or leaks a secret.
func checkErrorLine(t *testing.T, err error, baseURL string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	if strings.Contains(msg, testKey) || strings.Contains(msg, "Bearer") {
		t.Errorf("error leaks the key: %q", msg)
	}
	if strings.Contains(msg, baseURL) {
		t.Errorf("error repeats the full URL: %q", msg)
	}
}

func TestOpenAIFailures(t *testing.T) {
	retryNow := map[string]string{"Retry-After": "0"}
	ok := textReply("ok")
	tests := []struct {
		name     string
		replies  []fakeReply
		key      string // "" = testKey
		want     string // "" = success; otherwise the exact error, {ep} = scheme://host
		requests int
	}{
		{"429 with Retry-After 0, then success", []fakeReply{errorReply(429, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, retryNow), ok}, "", "", 2},
		{"429 with retry-after-ms, then success", []fakeReply{errorReply(429, `{}`, map[string]string{"retry-after-ms": "3"}), ok}, "", "", 2},
		{"503 twice without a hint, then success", []fakeReply{errorReply(503, ``, nil), errorReply(503, ``, nil), ok}, "", "", 3},
		{"429 every time", []fakeReply{errorReply(429, `{"error":{"message":"Rate limit reached for org-secret","code":"rate_limit_exceeded"}}`, retryNow)}, "",
			"the model endpoint is overloaded (429) and still refused after 3 tries", 3},
		{"500 three times", []fakeReply{errorReply(500, `{"error":{"message":"boom","type":"server_error"}}`, nil)}, "",
			"the model endpoint at {ep} had a server error (500 Internal Server Error) and still failed after 3 tries: boom", 3},
		{"502 HTML page", []fakeReply{errorReply(502, `<html><body>Bad Gateway</body></html>`, nil)}, "",
			"the model endpoint at {ep} had a server error (502 Bad Gateway) and still failed after 3 tries", 3},
		{"500 repeating the key", []fakeReply{errorReply(500, `{"error":{"message":"upstream rejected `+testKey+`"}}`, nil), ok}, "", "", 2},
		{"401", []fakeReply{errorReply(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`","code":"invalid_api_key"}}`, nil)}, "",
			"the model endpoint refused the API key (401); check llm.api_key", 1},
		{"401 without a key", []fakeReply{errorReply(401, `{"error":{"message":"missing key"}}`, nil)}, "none",
			"the model endpoint requires an API key (401); set llm.api_key", 1},
		{"403", []fakeReply{errorReply(403, `{"error":{"message":"Project does not have access to model test-model","code":"model_access_denied"}}`, nil)}, "",
			"the model endpoint denied access (403 model_access_denied); check llm.api_key and the model's permissions: Project does not have access to model test-model", 1},
		{"404 unknown model", []fakeReply{errorReply(404, `{"error":{"message":"The model test-model does not exist","code":"model_not_found"}}`, nil)}, "",
			`model "test-model" was not found at the endpoint (404)`, 1},
		{"404 unknown model, Ollama", []fakeReply{errorReply(404, `{"error":"model \"test-model\" not found, try pulling it first"}`, nil)}, "",
			`model "test-model" was not found at the endpoint (404)`, 1},
		{"404 unknown model, vLLM", []fakeReply{errorReply(404, `{"object":"error","message":"The model test-model does not exist.","type":"NotFoundError","code":404}`, nil)}, "",
			`model "test-model" was not found at the endpoint (404)`, 1},
		{"404 wrong path", []fakeReply{errorReply(404, `404 page not found`, nil)}, "",
			"the endpoint at {ep} has no chat completions API (404); check llm.base_url (it usually ends in /v1)", 1},
		{"400 context too long", []fakeReply{errorReply(400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, nil)}, "",
			"the conversation is too long for the model's context (400 context_length_exceeded)", 1},
		{"400 context too long, llama.cpp", []fakeReply{errorReply(400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it (context window 4096)","type":"exceed_context_size_error"}}`, nil)}, "",
			"the conversation is too long for the model's context (400)", 1},
		{"400 other", []fakeReply{errorReply(400, `{"error":{"message":"Invalid value for 'temperature'.","code":"invalid_value"}}`, nil)}, "",
			"the model endpoint rejected the request (400 invalid_value): Invalid value for 'temperature'.", 1},
		{"429 quota", []fakeReply{errorReply(429, `{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}`, retryNow)}, "",
			"the model endpoint refused: the account's quota is used up (429 insufficient_quota)", 1},
		{"429 asking for a long wait", []fakeReply{errorReply(429, `{}`, map[string]string{"Retry-After": "120"})}, "",
			"the model endpoint is overloaded (429); it asked to wait 2m0s, try again later", 1},
		{"not a chat completion", []fakeReply{{body: `<html>hello</html>`}}, "",
			"the model endpoint at {ep} sent an answer that is not a chat completion", 1},
		{"no choices", []fakeReply{{body: `{"id":"x","object":"chat.completion","choices":[]}`}}, "",
			`the model endpoint at {ep} answered without any choices (model "test-model")`, 1},
		{"error inside a 200 answer", []fakeReply{{body: `{"id":"x","choices":[],"error":{"message":"Provider returned error","code":502}}`}}, "",
			"the model endpoint at {ep} answered with an error instead of a completion: Provider returned error", 1},
		{"empty answer", []fakeReply{completion("length", `{"role":"assistant","content":""}`)}, "",
			`the model returned an empty answer (finish_reason "length")`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeOpenAI(t, tt.replies...)
			cfg := OpenAIConfig{MaxRetries: 2, APIKey: tt.key}
			o := fake.provider(cfg)
			if tt.key == "none" {
				o.cfg.APIKey = "" // the fake does not check it; the message does
			}
			resp, err := o.Complete(context.Background(), userRequest("hi"))
			if n := len(fake.requests()); n != tt.requests {
				t.Errorf("endpoint got %d requests, want %d", n, tt.requests)
			}
			if tt.want == "" {
				if err != nil || resp.Text != "ok" {
					t.Fatalf("got %q, %v; want success", resp.Text, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, got %+v", resp)
			}
			want := strings.ReplaceAll(tt.want, "{ep}", fake.srv.URL)
			if got := err.Error(); got != want && !(strings.HasSuffix(tt.name, "chat completion") && strings.HasPrefix(got, want)) {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
			checkErrorLine(t, err, fake.url())
		})
	}
}

func TestOpenAIErrorUnwraps(t *testing.T) {
	fake := newFakeOpenAI(t, errorReply(400, `{"error":{"message":"bad","code":"invalid_value"}}`, nil))
	_, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), userRequest("hi"))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "invalid_value" {
		t.Fatalf("errors.As(*openai.Error) = %v on %v", ae, err)
	}
}

func TestOpenAIKeyRedactedFromServerText(t *testing.T) {
	fake := newFakeOpenAI(t, errorReply(500, `{"error":{"message":"upstream rejected `+testKey+` twice"}}`, nil))
	_, err := fake.provider(OpenAIConfig{}).Complete(context.Background(), userRequest("hi"))
	if err == nil || !strings.Contains(err.Error(), "upstream rejected [redacted] twice") {
		t.Fatalf("got %v, want the server's text with the key redacted", err)
	}
	checkErrorLine(t, err, fake.url())
}

func TestOpenAITimeout(t *testing.T) {
	fake := newFakeOpenAI(t, fakeReply{hang: true})
	o := fake.provider(OpenAIConfig{Timeout: 50 * time.Millisecond, MaxRetries: 2})
	_, err := o.Complete(context.Background(), userRequest("hi"))
	if err == nil {
		t.Fatal("a hanging endpoint did not fail")
	}
	want := "the model endpoint at " + fake.srv.URL + " did not answer within 50ms"
	if err.Error() != want {
		t.Errorf("error\n got %s\nwant %s", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error does not unwrap to context.DeadlineExceeded: %v", err)
	}
	if n := len(fake.requests()); n != 1 {
		t.Errorf("a timeout was retried: %d requests", n)
	}
	checkErrorLine(t, err, fake.url())
}

func TestOpenAITurnBudget(t *testing.T) {
	t.Run("hanging endpoint", func(t *testing.T) {
		fake := newFakeOpenAI(t, fakeReply{hang: true})
		_, err := fake.provider(OpenAIConfig{TurnBudget: 50 * time.Millisecond}).Complete(context.Background(), userRequest("hi"))
		want := "the model endpoint at " + fake.srv.URL + " did not finish within the turn budget of 50ms"
		if err == nil || err.Error() != want {
			t.Fatalf("error\n got %v\nwant %s", err, want)
		}
	})
	t.Run("retry would overrun", func(t *testing.T) {
		// The endpoint asks for a 1s pause; the budget leaves no room, so the call ends at
		// once instead of sleeping into the deadline.
		fake := newFakeOpenAI(t, errorReply(503, `{}`, map[string]string{"Retry-After": "1"}))
		_, err := fake.provider(OpenAIConfig{TurnBudget: 200 * time.Millisecond, MaxRetries: 5}).Complete(context.Background(), userRequest("hi"))
		want := "the model endpoint at " + fake.srv.URL + " had a server error (503 Service Unavailable); gave up within the turn budget of 200ms"
		if err == nil || err.Error() != want {
			t.Fatalf("error\n got %v\nwant %s", err, want)
		}
		if n := len(fake.requests()); n != 1 {
			t.Errorf("endpoint got %d requests, want 1", n)
		}
	})
}

func TestOpenAICancelled(t *testing.T) {
	fake := newFakeOpenAI(t, fakeReply{hang: true})
	o := fake.provider(OpenAIConfig{MaxRetries: 3})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(fake.requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := o.Complete(ctx, userRequest("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := len(fake.requests()); n != 1 {
		t.Errorf("a cancelled call was retried: %d requests", n)
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: base + "/v1?api-key=" + testKey, APIKey: testKey, Model: "m", MaxRetries: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.baseDelay = time.Millisecond
	_, err = o.Complete(context.Background(), userRequest("hi"))
	want := "the model endpoint at " + base + " could not be reached (connect: connection refused) after 3 tries"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got %v\nwant %s", err, want)
	}
	checkErrorLine(t, err, base+"/v1")
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond, true},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"HTTP date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds win", map[string]string{"Retry-After": "5", "Retry-After-Ms": "20"}, 20 * time.Millisecond, true},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "5", "Retry-After-Ms": "soon"}, 5 * time.Second, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
