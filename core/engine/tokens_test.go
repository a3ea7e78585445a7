package engine_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/nudges"
)

// used is s with the usage the endpoint reported for it.
func used(s step, prompt, cached, completion int64) step {
	s.resp.Usage = core.Usage{Prompt: prompt, Cached: cached, Completion: completion}
	return s
}

// tokensOf is the count of calls with the given usages (a zero usage: not reported).
func tokensOf(us ...core.Usage) plan.Tokens {
	var t plan.Tokens
	for _, u := range us {
		t = t.Add(u.Tokens())
	}
	return t
}

// TestTokensPerSessionAndVersion: each call's usage is stored with the turn's step, on
// the session (all, today) and on the plan version it worked on: the planning calls that
// produced a version are that version's (not the revised one's), the executing calls the
// accepted version's; a call without usage counts as not reported. /plan status says it,
// the counts survive a restart, and /metrics gets them by phase.
func TestTokensPerSessionAndVersion(t *testing.T) {
	h := newHarness(t)
	obs := &countingObserver{counts: map[string]int{}}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: h.out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))
	sid := sessionID("main")
	u1, u2 := core.Usage{Prompt: 3000, Completion: 50}, core.Usage{Prompt: 4000, Cached: 2944, Completion: 120}
	u3, u4 := core.Usage{Prompt: 5000, Cached: 3968, Completion: 100}, core.Usage{Prompt: 6000, Cached: 4992, Completion: 30}

	h.say("main", "local", "/plan on")
	h.model.push(sid, used(text("Which docs?"), u1.Prompt, u1.Cached, u1.Completion))
	h.say("main", "local", "tidy the docs")
	if s := h.session("main"); s.Tokens.Planning != tokensOf(u1) || s.Tokens.All != tokensOf(u1) {
		t.Fatalf("after a planning call: %+v, want planning and all %+v", s.Tokens, tokensOf(u1))
	}
	mustContain(t, joinTexts(h.say("main", "local", "/plan")), "planning so far: 3k tokens, 0 cached · this conversation: 3k tokens, 0 cached")

	h.model.push(sid, used(calls(propose("Docs", "Reword", "Link")), u2.Prompt, u2.Cached, u2.Completion))
	h.say("main", "local", "the README")
	v1 := h.plan(h.session("main").PlanID)
	if want := tokensOf(u1, u2); v1.Tokens != want {
		t.Fatalf("v1 tokens %+v, want its planning calls %+v", v1.Tokens, want)
	}
	if s := h.session("main"); !s.Tokens.Planning.IsZero() {
		t.Errorf("the proposal left planning tokens on the session: %+v", s.Tokens.Planning)
	}

	h.model.push(sid, used(calls(propose("Docs, one step", "Reword")), u3.Prompt, u3.Cached, u3.Completion))
	h.say("main", "local", "/plan revise one step")
	v2 := h.plan(h.session("main").PlanID)
	if v2.Version != 2 || v2.Tokens != tokensOf(u3) {
		t.Fatalf("v%d tokens %+v, want %+v", v2.Version, v2.Tokens, tokensOf(u3))
	}
	if got := h.plan(v1.ID).Tokens; got != tokensOf(u1, u2) {
		t.Errorf("the revision changed v1's tokens to %+v", got)
	}

	h.model.push(sid, used(calls(update(stepArg{Step: "Reword", Status: "in_progress"})), u4.Prompt, u4.Cached, u4.Completion),
		text("Rewording now.")) // no usage reported
	h.say("main", "local", "/plan accept")
	want := tokensOf(u3, u4, core.Usage{})
	if got := h.plan(v2.ID).Tokens; got != want {
		t.Fatalf("v2 tokens after two executing calls %+v, want %+v", got, want)
	}
	all := tokensOf(u1, u2, u3, u4, core.Usage{})
	s := h.session("main")
	if s.Tokens.All != all || s.Tokens.Day != "2026-11-30" || s.Tokens.Today != all {
		t.Fatalf("session tokens %+v, want all and today %+v on 2026-11-30", s.Tokens, all)
	}
	status := "this plan: 11k tokens, 9k cached (1 call not reported) · this conversation: 18k tokens, 12k cached (1 call not reported)"
	mustContain(t, joinTexts(h.say("main", "local", "/plan")), status)

	h.restart()
	if got := h.plan(v2.ID).Tokens; got != want {
		t.Errorf("after a restart v2 has %+v, want %+v", got, want)
	}
	mustContain(t, joinTexts(h.say("main", "local", "/plan")), status)

	got, _ := obs.snapshot()
	for k, n := range map[string]int{
		"tokens planning prompt": 12000, "tokens planning cached": 6912, "tokens planning completion": 270,
		"tokens executing prompt": 6000, "tokens executing cached": 4992, "tokens executing completion": 30,
	} {
		if got[k] != n {
			t.Errorf("%s: %d, want %d", k, got[k], n)
		}
	}
}

// TestPlanTokenBudgetStops: an executing call that takes the version over
// plan_mode.max_tokens_per_plan stops the turn before its calls run, recorded as a stop
// of the version with the chat told why and what to do; a person's message does not call
// the model again; a new version counts anew.
func TestPlanTokenBudgetStops(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxTokensPerPlan = 10_000 })
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, used(calls(propose("Docs", "Reword", "Link")), 4000, 0, 100))
	h.say("main", "local", "tidy the docs")
	step := update(stepArg{Step: "Reword", Status: "in_progress"})
	h.model.push(sid, used(calls(step), 6000, 4000, 50))
	rs := h.say("main", "local", "/plan accept")
	notice := "Stopped: plan v1 used 10k tokens, its budget is 10k (plan_mode.max_tokens_per_plan). Going on needs a new version: /plan revise <feedback>, or an operator raises the budget."
	mustContain(t, joinTexts(rs), notice)
	if last := lastText(rs); last != notice {
		t.Errorf("the last word is %q, want the stop notice", last)
	}
	p := h.plan(h.session("main").PlanID)
	if p.Run.Stop == nil || p.Run.Stop.Kind != plan.StopTokenBudget {
		t.Fatalf("stop %+v, want %s", p.Run.Stop, plan.StopTokenBudget)
	}
	if p.Body.Steps[0].Status != plan.StepPending {
		t.Errorf("the call of the answer that spent the budget ran: step %s", p.Body.Steps[0].Status)
	}
	if got := toolContent(t, h, step.ID); got != "not run: the token budget is spent" {
		t.Errorf("the unrun call's result: %q", got)
	}
	if p.Tokens.Total() != 10_150 {
		t.Errorf("plan tokens %+v, want 10150 in all", p.Tokens)
	}
	mustContain(t, joinTexts(h.say("main", "local", "/plan")), "the plan's token budget was spent (token_budget_exceeded)",
		"next: /plan revise <feedback> for a new version (its tokens count anew)")

	before := len(h.model.requests())
	mustContain(t, joinTexts(h.say("main", "local", "go on anyway")), notice)
	if n := len(h.model.requests()); n != before {
		t.Errorf("a message after the stop made %d model calls", n-before)
	}

	h.model.push(sid, used(calls(propose("Docs, smaller", "Reword")), 2000, 1000, 40))
	h.say("main", "local", "/plan revise smaller")
	v2 := h.plan(h.session("main").PlanID)
	if v2.Version != 2 || v2.Tokens.Total() != 2040 {
		t.Errorf("v%d tokens %+v, want 2040 of its own", v2.Version, v2.Tokens)
	}
}

// TestPlanningTokenBudgetStops: planning that spends the plan budget without proposing
// stops before the next model call and says how to get out.
func TestPlanningTokenBudgetStops(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxTokensPerPlan = 5000 })
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, used(text("Looking."), 5200, 0, 10))
	h.say("main", "local", "tidy the docs")
	before := len(h.model.requests())
	mustContain(t, joinTexts(h.say("main", "local", "go on")),
		"Stopped: planning used 5k tokens without proposing a version; a plan's budget is 5k (plan_mode.max_tokens_per_plan). /plan off to end it")
	if n := len(h.model.requests()); n != before {
		t.Errorf("the stopped turn made %d model calls", n-before)
	}
	h.say("main", "local", "/plan off")
	if s := h.session("main"); !s.Tokens.Planning.IsZero() || s.Tokens.All.Total() != 5210 {
		t.Errorf("after /plan off: %+v, want no planning count and 5210 in all", s.Tokens)
	}
}

// TestDailyTokenBudget: a session that used agent.max_tokens_per_session_day today gets
// no model call until the next day (UTC, by the engine's clock), in any phase.
func TestDailyTokenBudget(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.MaxTokensPerSessionDay = 5000 })
	sid := sessionID("main")
	h.model.push(sid, used(text("Hello."), 4990, 0, 20))
	mustContain(t, joinTexts(h.say("main", "local", "hi")), "Hello.")
	before := len(h.model.requests())
	mustContain(t, joinTexts(h.say("main", "local", "more")),
		"Stopped: this conversation used 5k tokens today (UTC), its daily budget is 5k (agent.max_tokens_per_session_day).")
	if n := len(h.model.requests()); n != before {
		t.Errorf("the stopped turn made %d model calls", n-before)
	}
	h.clock = time.Date(2026, 12, 1, 0, 0, 1, 0, time.UTC)
	h.model.push(sid, used(text("Good morning."), 100, 0, 5))
	mustContain(t, joinTexts(h.say("main", "local", "more")), "Good morning.")
	s := h.session("main")
	if s.Tokens.Day != "2026-12-01" || s.Tokens.Today.Total() != 105 || s.Tokens.All.Total() != 5115 {
		t.Errorf("session tokens %+v, want 105 on 2026-12-01 and 5115 in all", s.Tokens)
	}
}

// TestTokensLogged: each call's tokens at debug, the turn's sum at info; no content.
func TestTokensLogged(t *testing.T) {
	h := newHarness(t)
	var buf bytes.Buffer
	w := &syncWriter{w: &buf}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: h.out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Log: log}))
	sid := sessionID("main")
	h.model.push(sid, used(calls(call("plan_status", map[string]any{})), 3000, 2048, 20), used(text("secret-free answer"), 3100, 2944, 8))
	h.say("main", "local", "how is it going?")
	w.mu.Lock()
	out := buf.String()
	w.mu.Unlock()
	mustContain(t, out, `level=DEBUG msg="model call tokens"`, "phase=chat", "prompt_tokens=3000 cached_tokens=2048 completion_tokens=20",
		"prompt_tokens=3100 cached_tokens=2944 completion_tokens=8",
		`level=INFO msg="turn tokens"`, "calls=2 unreported_calls=0 prompt_tokens=6100 cached_tokens=4992 completion_tokens=28")
	if strings.Contains(out, "how is it going") || strings.Contains(out, "secret-free answer") {
		t.Errorf("the log holds the conversation's text:\n%s", out)
	}
}
