package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/llm"
	"github.com/plangate/plangate/core/plan"
)

// With the history trimmed to 2 messages the accepted plan is long gone from the window,
// yet every model call of an executing turn carries its contract pinned in the system
// prompt, the same bytes all along, and where its steps stand as the last message, with
// the step's new status once update_plan moved it; planning calls carry neither.
func TestExecutingTurnCarriesThePinnedPlanPastTheHistoryBudget(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.HistoryMessages = 2 })
	p := h.toPending("main", "Pinned work")
	planning := len(h.model.requests())
	if planning == 0 {
		t.Fatal("no planning call")
	}
	for i, r := range h.model.requests() {
		if strings.Contains(r.System, "ACCEPTED PLAN") || len(history(r)) != len(r.Messages) {
			t.Errorf("request %d (before the acceptance) pins a plan:\n%s", i, r.System)
		}
	}
	h.say("main", "local", "/plan accept")
	sid := sessionID("main")
	h.model.push(sid, calls(call("plan_status", map[string]any{})))
	h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "in_progress"})))
	h.model.push(sid, text("working on it"))
	h.say("main", "local", "one")
	h.say("main", "local", "two")
	h.say("main", "local", "three")
	h.model.push(sid, text("still here"))
	h.say("main", "local", "what is the plan?")

	reqs := h.model.requests()[planning:]
	if len(reqs) < 4 {
		t.Fatalf("%d executing model calls, want at least 4", len(reqs))
	}
	last := reqs[len(reqs)-1]
	if len(history(last)) > 2 {
		t.Fatalf("the last call's history has %d messages, want the 2 of history_messages", len(history(last)))
	}
	for _, m := range history(last) {
		if strings.Contains(m.Content, "Pinned work") {
			t.Fatalf("the trimmed history still holds the plan, so the test proves nothing: %q", m.Content)
		}
	}
	header := "ACCEPTED PLAN v" + strconv.Itoa(p.Version) + " (pinned; the workspace root's PLAN.md and PLAN.json are read-only copies of it"
	progress := func(r core.ModelRequest) string {
		m := r.Messages[len(r.Messages)-1]
		if m.Name != core.ProgressName || m.Role != core.RoleUser {
			t.Fatalf("the last message is not the plan's progress: %+v", m)
		}
		return m.Content
	}
	for i, r := range reqs {
		mustContain(t, r.System, header, "Title: Pinned work", "First step", "Second step", "Scope:", "Budgets:", "Verification: none declared", "Stops:")
		mustContain(t, progress(r), "PLAN PROGRESS v"+strconv.Itoa(p.Version), "First step", "Second step")
		if i > 0 && r.System != reqs[0].System {
			t.Errorf("calls 0 and %d of one execution see different system prompts:\n%s\n---\n%s", i, reqs[0].System, r.System)
		}
	}
	if first := progress(reqs[0]); strings.Contains(first, "[>]") || !strings.Contains(first, "1. [ ] ") {
		t.Errorf("the first executing call shows step 1 not pending:\n%s", first)
	}
	mustContain(t, progress(last), "1. [>] ", "2. [ ] ")
}

// The pinned plan reaches the wire: an executing turn through the real openai-go client
// sends it, byte for byte as plan.Pinned renders the stored version, in the system message
// of a request whose history is trimmed to 2 messages, and plan.Progress as its last
// message.
func TestPinnedPlanReachesTheWire(t *testing.T) {
	var mu sync.Mutex
	var systems, progresses []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
				Name    string `json:"name"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
			systems = append(systems, req.Messages[0].Content)
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && last.Name == core.ProgressName {
			progresses = append(progresses, last.Content)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"On it."}}]}`)
	}))
	t.Cleanup(srv.Close)

	h := newHarness(t, func(c *engine.Config) { c.HistoryMessages = 2 })
	p := h.toExecuting("main", "Wired plan")
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: m, Out: h.out, Now: func() time.Time { return h.clock }}))
	h.say("main", "local", "one")
	h.say("main", "local", "two")
	if got := lastText(h.say("main", "local", "go on")); got != "On it." {
		t.Fatalf("reply %q", got)
	}
	stored := h.plan(p.ID)
	want := "\n\n" + plan.Pinned(stored.Version, stored.Body)
	mu.Lock()
	defer mu.Unlock()
	if len(systems) != 3 {
		t.Fatalf("%d system messages on the wire, want 3", len(systems))
	}
	for i, s := range systems {
		if !strings.HasSuffix(s, want) {
			t.Errorf("system message %d does not end in the pinned plan:\n%s", i, s)
		}
	}
	if systems[0] != systems[2] {
		t.Error("the same plan state sent different system messages")
	}
	wantProgress := plan.Progress(stored.Version, stored.Body)
	if len(progresses) != 3 || progresses[2] != wantProgress {
		t.Errorf("the progress on the wire (%d messages) is not the stored version's:\n%v\nwant\n%s", len(progresses), progresses, wantProgress)
	}
}
