package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// recorder is a core.Sender that keeps every reply.
type recorder struct {
	mu      sync.Mutex
	replies []core.Reply
	onSend  func(core.Reply) // nil: none; called outside the lock
}

func (r *recorder) Send(_ context.Context, rep core.Reply) (string, error) {
	r.mu.Lock()
	r.replies = append(r.replies, rep)
	id, hook := fmt.Sprintf("m%d", len(r.replies)), r.onSend
	r.mu.Unlock()
	if hook != nil {
		hook(rep)
	}
	return id, nil
}

func (r *recorder) all() []core.Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.Reply(nil), r.replies...)
}

// since returns the replies after the first n.
func (r *recorder) since(n int) []core.Reply { return r.all()[n:] }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.replies)
}

func joinTexts(rs []core.Reply) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Text)
		b.WriteString("\n---\n")
	}
	return b.String()
}

// step is one scripted model answer: a response or an error.
type step struct {
	resp core.ModelResponse
	err  error
}

// fakeModel is the shared scripted model (coretest.Model: a queue per session, "ok" when
// it is empty, blocks and a hook) with this package's step helpers.
type fakeModel struct{ *coretest.Model }

func newFakeModel() *fakeModel { return &fakeModel{coretest.NewModel()} }

func (m *fakeModel) push(session string, steps ...step) {
	for _, s := range steps {
		if s.err != nil {
			m.Fail(session, s.err)
		} else {
			m.Push(session, s.resp)
		}
	}
}

func (m *fakeModel) requests() []core.ModelRequest { return m.Calls() }

func calls(tc ...core.ToolCall) step {
	return step{resp: core.ModelResponse{ToolCalls: tc}}
}

func text(s string) step { return step{resp: core.ModelResponse{Text: s}} }

var callSeq int64
var callSeqMu sync.Mutex

func call(name string, args any) core.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	callSeqMu.Lock()
	callSeq++
	id := fmt.Sprintf("call_%d", callSeq)
	callSeqMu.Unlock()
	return core.ToolCall{ID: id, Name: name, Args: b}
}

type stepArg struct {
	Step               string   `json:"step"`
	Status             string   `json:"status,omitempty"`
	AcceptanceCriteria []string `json:"acceptance_criteria,omitempty"`
	VerifiedCriteria   []string `json:"verified_criteria,omitempty"`
}

// propose is an exit_plan_mode call with the given steps.
func propose(title string, steps ...string) core.ToolCall {
	var ss []stepArg
	for _, s := range steps {
		ss = append(ss, stepArg{Step: s})
	}
	return call("exit_plan_mode", map[string]any{"title": title, "summary": "Summary of " + title, "plan": ss})
}

func update(steps ...stepArg) core.ToolCall {
	return call("update_plan", map[string]any{"plan": steps, "merge": true})
}

// harness runs an Engine on a real SQLite file with a fake model and a reply recorder.
type harness struct {
	t     testing.TB
	dir   string
	st    *store.Store
	eng   *engine.Engine
	out   *recorder
	model *fakeModel
	cfg   engine.Config
	tools core.Toolbox
	// checks runs plans' verification commands (Deps.Checks); nil: none can run.
	checks core.Checker
	clock  time.Time
	// driver and target name the store (store.OpenDriver) when it is not the SQLite
	// file in dir.
	driver, target string
	// secrets is the engine's secret scanner (Deps.Secrets); nil checks nothing.
	secrets core.SecretScanner
}

var day = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, mutate ...func(*engine.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, "", "", mutate...)
}

// newHarnessOn is newHarness on the store driver opens at target (store.OpenDriver);
// "" is the SQLite file in the harness's directory.
func newHarnessOn(t testing.TB, driver, target string, mutate ...func(*engine.Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, out: &recorder{}, model: newFakeModel(), clock: day, driver: driver, target: target}
	h.cfg = engine.Config{
		PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PerSession: true,
		MaxIterations: 10, HistoryMessages: 40, PlanMode: true,
	}
	for _, f := range mutate {
		f(&h.cfg)
	}
	h.open()
	return h
}

// open (re)opens the store and builds a fresh engine, as a restarted process would.
func (h *harness) open() {
	h.t.Helper()
	st := h.openStore()
	h.st = st
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: h.model, Tools: h.tools, Checks: h.checks, Secrets: h.secrets, Out: h.out, Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}}))
}

// openStore opens another handle on the harness's store, closed at the end of the test.
func (h *harness) openStore() *store.Store {
	h.t.Helper()
	var st *store.Store
	var err error
	if h.driver == "" {
		st, err = store.Open(context.Background(), filepath.Join(h.dir, "plangate.db"))
	} else {
		st, err = store.OpenDriver(context.Background(), h.driver, h.target)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { st.Close() })
	return st
}

// waitOnCleanup makes the test wait for eng's jobs and background plan file writes before
// its temporary directory is removed (cleanups run last-registered first). Not for an
// engine a test leaves blocked on purpose.
func (h *harness) waitOnCleanup(eng *engine.Engine) *engine.Engine {
	h.t.Cleanup(func() { _ = eng.Wait(context.Background()) })
	return eng
}

func (h *harness) restart() {
	h.t.Helper()
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func addr(chat string) core.Address {
	return core.Address{Channel: "terminal", Account: "local", Chat: chat}
}

func sessionID(chat string) string { return addr(chat).SessionID() }

// say delivers a message from sender in chat and waits for it to be handled; it returns
// the replies it produced.
func (h *harness) say(chat, sender, text string) []core.Reply {
	h.t.Helper()
	n := h.out.count()
	m := core.Message{Address: addr(chat), Sender: core.Person{ID: sender, Name: sender}, Text: text, Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		h.t.Fatalf("handling %q: %v", text, err)
	}
	return h.out.since(n)
}

func (h *harness) click(chat, sender string, a core.Action) []core.Reply {
	h.t.Helper()
	n := h.out.count()
	m := core.Message{Address: addr(chat), Sender: core.Person{ID: sender, Name: sender}, Action: &a, Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		h.t.Fatalf("handling click %v: %v", a, err)
	}
	return h.out.since(n)
}

func (h *harness) session(chat string) core.Session {
	h.t.Helper()
	s, err := h.st.Session(context.Background(), sessionID(chat))
	if err != nil {
		h.t.Fatalf("loading session %s: %v", chat, err)
	}
	return s
}

func (h *harness) plan(id string) core.Plan {
	h.t.Helper()
	p, err := h.st.Plan(context.Background(), id)
	if err != nil {
		h.t.Fatalf("loading plan %s: %v", id, err)
	}
	return p
}

func (h *harness) plans(chat string) []core.Plan {
	h.t.Helper()
	ps, err := h.st.Plans(context.Background(), sessionID(chat))
	if err != nil {
		h.t.Fatal(err)
	}
	return ps
}

func (h *harness) events(chat string) []core.EventKind {
	h.t.Helper()
	evs, err := h.st.Events(context.Background(), sessionID(chat))
	if err != nil {
		h.t.Fatal(err)
	}
	var kinds []core.EventKind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// toPending drives chat to awaiting_approval with a two-step plan.
func (h *harness) toPending(chat, title string) core.Plan {
	h.t.Helper()
	h.say(chat, "local", "/plan on")
	h.model.push(sessionID(chat), calls(propose(title, "First step", "Second step")))
	h.say(chat, "local", "make a plan for "+title)
	s := h.session(chat)
	if s.Phase != core.PhaseAwaitingApproval {
		h.t.Fatalf("setup: phase %s, want awaiting_approval; replies:\n%s", s.Phase, joinTexts(h.out.all()))
	}
	return h.plan(s.PlanID)
}

// toExecuting drives chat to executing.
func (h *harness) toExecuting(chat, title string) core.Plan {
	h.t.Helper()
	p := h.toPending(chat, title)
	h.say(chat, "local", "/plan accept")
	if s := h.session(chat); s.Phase != core.PhaseExecuting {
		h.t.Fatalf("setup: phase %s, want executing", s.Phase)
	}
	return p
}

// setAuto flips a stored session's auto-approve flag directly.
func (h *harness) setAuto(chat string, on bool) {
	h.t.Helper()
	s := h.session(chat)
	s.AutoApprove = on
	if _, err := h.st.Commit(context.Background(), core.Change{Session: &s}); err != nil {
		h.t.Fatal(err)
	}
}

func lastText(rs []core.Reply) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Text
}

func mustContain(t testing.TB, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}
