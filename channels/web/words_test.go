package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestRequestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/plan on add a changelog", "Add a changelog"},
		{"  fix   the\nREADME  ", "Fix the README"},
		{"/plan on ", ""},
		{"/plan status", ""},
		{"/help", ""},
		{"", ""},
		{strings.Repeat("ä", 80), strings.ToUpper("ä") + strings.Repeat("ä", 58) + "…"},
	} {
		got, ok := requestTitle(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("requestTitle(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestStateWords(t *testing.T) {
	steps := func(st ...plan.StepStatus) []plan.Step {
		var out []plan.Step
		for _, s := range st {
			out = append(out, plan.Step{Text: "x", Status: s})
		}
		return out
	}
	running := core.Plan{Status: core.PlanAccepted, Body: plan.Body{Steps: steps(plan.StepCompleted, plan.StepInProgress, plan.StepPending, plan.StepPending)}}
	stopped := running
	stopped.Run.Stop = &plan.Stop{Kind: plan.StopVerificationFailed}
	done := core.Plan{Status: core.PlanCompleted}
	for _, tc := range []struct {
		name string
		s    core.Session
		p    *core.Plan
		want string
	}{
		{"chat", core.Session{Phase: core.PhaseOff}, nil, "chatting"},
		{"planning", core.Session{Phase: core.PhasePlanning}, nil, "planning"},
		{"waiting", core.Session{Phase: core.PhaseAwaitingApproval}, nil, "waiting for approval"},
		{"question", core.Session{Phase: core.PhaseExecuting, Question: &core.Question{Text: "?"}}, &running, "waiting for an answer"},
		{"running", core.Session{Phase: core.PhaseExecuting}, &running, "running step 2 of 4"},
		{"stopped", core.Session{Phase: core.PhaseExecuting}, &stopped, "stopped: verification failed"},
		{"completed", core.Session{Phase: core.PhaseOff}, &done, "completed"},
	} {
		if got := stateWords(tc.s, tc.p); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTimelineSentences: every audit row is a sentence; a tool row's JSON detail is read,
// never shown.
func TestTimelineSentences(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ev   core.Event
		want string
	}{
		{core.Event{Kind: core.EventAccepted, Actor: core.PersonActor("alice"), Channel: "web", PlanVersion: 2}, "alice accepted v2."},
		{core.Event{Kind: core.EventAccepted, Actor: core.PersonActor("web:alice"), Channel: "telegram", PlanVersion: 1}, "alice accepted v1."},
		{core.Event{Kind: core.EventRevised, Actor: core.PersonActor("42"), Channel: "telegram", PlanVersion: 1, Detail: "add tests"}, "telegram:42 sent v1 back for revision: “add tests”."},
		{core.Event{Kind: core.EventProposed, Actor: core.AgentActor, PlanVersion: 1, Detail: "Docs"}, "The agent proposed v1: “Docs”."},
		{core.Event{Kind: core.EventSuperseded, Actor: core.AgentActor, PlanVersion: 1, Detail: "by v2"}, "Plan v1 was superseded by v2."},
		{core.Event{Kind: core.EventAutoAccepted, Actor: core.AutoRule, PlanVersion: 3, Detail: "auto-approve turned on"}, "Auto-approve accepted v3 (“auto-approve turned on”)."},
		{core.Event{Kind: core.EventStopped, Actor: core.AgentActor, PlanVersion: 2, Detail: "verification_failed: 1 of 2 checks failed"}, "Plan v2 stopped: verification failed — 1 of 2 checks failed."},
		{core.Event{Kind: core.EventNudged, Actor: core.SystemActor, PlanVersion: 1}, "plangate sent a reminder about v1."},
		{core.Event{Kind: "tool_ran", Actor: core.AgentActor, PlanVersion: 2,
			Detail: `{"tool":"write_file","call":"write_file on README.md","gate":"scope","outcome":"ok","duration_ms":12}`}, "The agent ran write_file on README.md (12 ms), under v2."},
		{core.Event{Kind: "tool_blocked", Actor: core.AgentActor,
			Detail: `{"tool":"write_file","call":"write_file on .env","outcome":"refused","why":"outside the scope"}`}, "The agent was not allowed to call write_file on .env: outside the scope."},
		{core.Event{Kind: "tool_ran", Actor: core.AgentActor, Detail: `not json`}, "The agent called a tool."},
		{core.Event{Kind: "something_new", Actor: core.SystemActor, Detail: "x"}, "plangate: something new: “x”."},
	} {
		tc.ev.At = at
		got := timeline([]core.Event{tc.ev})
		if len(got) != 1 || got[0].Sentence != tc.want || !got[0].At.Equal(at) {
			t.Errorf("%s: %+v, want %q", tc.ev.Kind, got, tc.want)
		}
		if strings.Contains(got[0].Sentence, "{") || strings.Contains(got[0].Sentence, `":`) {
			t.Errorf("%s: the sentence shows stored text: %q", tc.ev.Kind, got[0].Sentence)
		}
	}
}

// TestFirstMessageMakesTheConversation: without a conversation the chat page has a message
// box posting to /conversations; its first message makes the conversation, names it and
// reaches the engine; a message over the limit is refused and makes none.
func TestFirstMessageMakesTheConversation(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	if page := alice.get("/"); !strings.Contains(page, `action="/conversations"`) || !strings.Contains(page, `id="text"`) {
		t.Fatalf("the first page has no message box for a new conversation: %s", page)
	}
	if ids := e.madeIDs("alice"); len(ids) != 0 {
		t.Fatalf("showing the page stored %q", ids)
	}
	res := alice.post("/conversations", url.Values{"text": {strings.Repeat("x", e.web.cfg.MaxMessageBytes+1)}})
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body(res), "max_message_bytes") {
		t.Fatalf("a first message too long: %d", res.StatusCode)
	}
	if ids := e.madeIDs("alice"); len(ids) != 0 {
		t.Fatalf("a refused first message stored %q", ids)
	}
	res = alice.post("/conversations", url.Values{"text": {"  tidy   the docs "}})
	id := strings.TrimPrefix(res.Header.Get("Location"), "/c/")
	if res.StatusCode != http.StatusSeeOther || id == "" {
		t.Fatalf("a first message: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if ids := e.madeIDs("alice"); len(ids) != 1 || ids[0] != id {
		t.Fatalf("stored conversations %q, want [%s]", ids, id)
	}
	waitFor(t, "the model to get the first message", func() bool { return e.model.LastUser(address("alice", id).SessionID()) == "tidy   the docs" })
	page := alice.get("/c/" + id)
	if !strings.Contains(page, `<h1 class="convo-title">Tidy the docs</h1>`) || !strings.Contains(page, `<span class="ctitle">Tidy the docs</span>`) {
		t.Fatalf("the conversation is not named after its first message: %s", page)
	}
	if titles, err := e.web.titles(t.Context(), "alice"); err != nil || titles[id] != "Tidy the docs" {
		t.Fatalf("stored titles %q (%v)", titles, err)
	}
	// A later message does not rename it.
	if res := alice.post("/c/"+id+"/messages", url.Values{"text": {"and the changelog"}}); res.StatusCode != http.StatusNoContent {
		t.Fatalf("a second message: %d", res.StatusCode)
	}
	if titles, _ := e.web.titles(t.Context(), "alice"); titles[id] != "Tidy the docs" {
		t.Fatalf("a second message renamed the conversation: %q", titles[id])
	}
}
