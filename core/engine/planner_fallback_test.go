package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/llm"
)

// A planning turn whose llm.plan_model answers 404 is answered by llm.model through the
// real openai-go client: the person gets the answer, /plan status says the planner fell
// back and why, /metrics counts the call as a fallback, and once the plan model answers
// again the status line is gone.
func TestPlannerFallsBackToTheMainModel(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	planDown := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		asked = append(asked, req.Model)
		down := planDown
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if req.Model == "big-planner" && down {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"The model big-planner does not exist","code":"model_not_found"}}`)
			return
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Looking around (`+req.Model+`)."}}]}`)
	}))
	t.Cleanup(srv.Close)

	h := newHarness(t)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "main-model", PlanModel: "big-planner", Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{counts: map[string]int{}}
	sw := &switchModel{}
	sw.m.Store(m)
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: sw, Out: h.out, Observer: obs, Now: func() time.Time { return h.clock }}))
	h.say("main", "local", "/plan on")
	if got := lastText(h.say("main", "local", "tidy the docs")); got != "Looking around (main-model)." {
		t.Fatalf("reply %q, want the main model's answer", got)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")),
		"planner: llm.plan_model big-planner failed (", "404", "planning uses llm.model main-model")
	if counts, _ := obs.snapshot(); counts["model fallback"] != 1 || counts["model error"] != 0 {
		t.Fatalf("observed %v, want one fallback and no error", counts)
	}

	// The plan model is back; a provider past its pause (a fresh one) asks it again.
	mu.Lock()
	planDown = false
	mu.Unlock()
	m2, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "main-model", PlanModel: "big-planner", Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw.m.Store(m2)
	if got := lastText(h.say("main", "local", "go on")); got != "Looking around (big-planner)." {
		t.Fatalf("reply %q, want the plan model's answer", got)
	}
	if got := lastText(h.say("main", "local", "/plan status")); strings.Contains(got, "planner:") {
		t.Fatalf("status still names a fallback:\n%s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"big-planner", "main-model", "big-planner"}; len(asked) != 3 || asked[0] != want[0] || asked[1] != want[1] || asked[2] != want[2] {
		t.Fatalf("models asked %v, want %v", asked, want)
	}
}

// switchModel is a core.Model whose provider the test replaces.
type switchModel struct{ m atomic.Pointer[llm.OpenAI] }

func (s *switchModel) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	return s.m.Load().Complete(ctx, req)
}
