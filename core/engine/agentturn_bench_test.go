package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/llm"
)

// instantOpenAI is a loopback OpenAI-compatible endpoint that answers at once: a
// plan_status tool call when the last message is from the user, else a final text.
func instantOpenAI(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
				Name string `json:"name"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && last.Name != core.ProgressName {
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"plan_status","arguments":"{}"}}]}}]}`)
			return
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"All quiet."}}]}`)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// TestOpenAIProviderThroughEngine drives a real turn through the engine with the real
// openai-go client against the loopback fake.
func TestOpenAIProviderThroughEngine(t *testing.T) {
	srv := instantOpenAI(t)
	h := newHarness(t)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: m, Out: h.out, Now: func() time.Time { return h.clock }}))
	if got := lastText(h.say("main", "local", "how are things?")); got != "All quiet." {
		t.Fatalf("reply %q", got)
	}
	tr, err := h.st.Transcript(context.Background(), sessionID("main"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range tr {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("transcript roles %v", roles)
	}
}

// BenchmarkAgentTurn is a full turn: engine -> agent loop -> the real openai-go client over
// loopback HTTP to an instant fake -> a tool call -> a second model call -> the reply, with
// the real SQLite store. ms/model-call is the whole turn divided by its two model calls;
// compare with BenchmarkLoopbackPOST for the bare HTTP cost.
func BenchmarkAgentTurn(b *testing.B) {
	srv := instantOpenAI(b)
	h := newHarness(b)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: m, Out: h.out, Now: time.Now}))
	ctx := context.Background()
	turns := 0
	for b.Loop() {
		// A fresh session each time keeps the history (and so the request) the same size.
		msg := core.Message{Address: addr(fmt.Sprintf("t%d", turns)), Sender: core.Person{ID: "local"}, Text: "how are things?"}
		if err := h.eng.Handle(ctx, msg); err != nil {
			b.Fatal(err)
		}
		turns++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(turns)/sec, "turns/s")
	b.ReportMetric(sec*1000/float64(2*turns), "ms/model-call")
}

// BenchmarkLoopbackPOST is the bare cost of one HTTP round trip to the same fake, for
// subtracting from BenchmarkAgentTurn.
func BenchmarkLoopbackPOST(b *testing.B) {
	srv := instantOpenAI(b)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"how are things?"}]}`)
	client := srv.Client()
	for b.Loop() {
		resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
