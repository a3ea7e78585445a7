package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// streamStep is one streamed model answer: the text so far after each chunk, the clock
// moved by gap before each, and the final response.
type streamStep struct {
	shown []string
	gap   time.Duration
	resp  core.ModelResponse
	after func() // runs once the text is out, before the answer returns
}

// streamModel is a core.Streamer answering from a script of steps.
type streamModel struct {
	clock *coretest.Clock
	mu    sync.Mutex
	steps []streamStep
}

func (m *streamModel) next() streamStep {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.steps) == 0 {
		return streamStep{resp: core.ModelResponse{Text: "ok"}}
	}
	s := m.steps[0]
	m.steps = m.steps[1:]
	return s
}

func (m *streamModel) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	return m.CompleteStream(ctx, req, nil)
}

func (m *streamModel) CompleteStream(_ context.Context, _ core.ModelRequest, onText func(string)) (core.ModelResponse, error) {
	s := m.next()
	for _, p := range s.shown {
		m.clock.Add(s.gap)
		if onText != nil {
			onText(p)
		}
	}
	if s.after != nil {
		s.after()
	}
	return s.resp, nil
}

// draftEnv is an engine on a SQLite file whose replies go through a real Hub to a fake
// channel that edits in place.
type draftEnv struct {
	t     *testing.T
	dir   string
	clock *coretest.Clock
	model *streamModel
	ch    *channeltest.Fake
	st    *store.Store
	eng   *engine.Engine
}

func newDraftEnv(t *testing.T, stream bool) *draftEnv {
	clock := coretest.NewClock(day)
	d := &draftEnv{t: t, dir: t.TempDir(), clock: clock, model: &streamModel{clock: clock}, ch: channeltest.NewFake("terminal")}
	d.open(stream)
	return d
}

func (d *draftEnv) open(stream bool) {
	st, err := store.Open(context.Background(), filepath.Join(d.dir, "plangate.db"))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { st.Close() })
	cfg := engine.Config{PlansDir: filepath.Join(d.dir, "plans"), WorkspaceRoot: filepath.Join(d.dir, "ws"), PerSession: true,
		MaxIterations: 10, HistoryMessages: 40, Stream: stream}
	hub := channels.NewHub(slog.New(slog.DiscardHandler), d.ch)
	d.st = st
	d.eng = engine.NewEngine(cfg, engine.Deps{Store: st, Model: d.model, Out: hub, Now: d.clock.Now})
	eng := d.eng
	d.t.Cleanup(func() { _ = eng.Wait(context.Background()) })
}

func (d *draftEnv) say(text string) {
	d.t.Helper()
	m := core.Message{Address: addr("a"), Sender: core.Person{ID: "p", Name: "p"}, Text: text, Time: d.clock.Now()}
	if err := d.eng.Handle(context.Background(), m); err != nil {
		d.t.Fatalf("handling %q: %v", text, err)
	}
}

// unsent counts the session's outbox rows not sent yet.
func (d *draftEnv) unsent() []core.Outgoing {
	d.t.Helper()
	rows, err := d.st.UnsentOutbox(context.Background(), []string{"terminal"}, 100)
	if err != nil {
		d.t.Fatal(err)
	}
	return rows
}

func editTexts(es []channeltest.Edit) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID+":"+e.Reply.Text)
	}
	return out
}

func TestDraftThrottledThenReplacedByTheAnswer(t *testing.T) {
	d := newDraftEnv(t, true)
	d.model.steps = []streamStep{{
		// Chunks 400 ms apart: edits at 0 (the post), 1.2 s and 2.4 s only.
		shown: []string{"It", "It is", "It is a", "It is a small", "It is a small change", "It is a small change,", "It is a small change, done"},
		gap:   400 * time.Millisecond,
		resp:  core.ModelResponse{Text: "It is a small change, done."},
	}}
	d.say("how big is it?")
	sent := d.ch.Replies()
	if len(sent) != 1 || sent[0].Text != "It" {
		t.Fatalf("new messages %+v, want only the draft \"It\"", sent)
	}
	want := []string{"terminal-1:It is a small", "terminal-1:It is a small change, done", "terminal-1:It is a small change, done."}
	if got := editTexts(d.ch.Edits()); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("edits %q, want %q", got, want)
	}
	if rows := d.unsent(); len(rows) != 0 {
		t.Errorf("unsent outbox rows %+v, want none", rows)
	}
	msgs, err := d.st.Transcript(context.Background(), sessionID("a"), 10)
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, m := range msgs {
		if m.Role == core.RoleAssistant {
			answers++
			if m.Content != "It is a small change, done." {
				t.Errorf("stored answer %q", m.Content)
			}
		}
	}
	if answers != 1 {
		t.Errorf("%d stored answers, want 1", answers)
	}
}

func TestDraftShowsToolStatus(t *testing.T) {
	d := newDraftEnv(t, true)
	args, _ := json.Marshal(map[string]string{"path": "docs/README.md"})
	d.model.steps = []streamStep{
		{shown: []string{"Let me look."}, gap: 2 * time.Second,
			resp: core.ModelResponse{Text: "Let me look.", ToolCalls: []core.ToolCall{{ID: "c1", Name: "read_file", Args: args}}}},
		{shown: []string{"Found"}, gap: 2 * time.Second, resp: core.ModelResponse{Text: "Found it."}},
	}
	d.say("read the readme")
	if sent := d.ch.Replies(); len(sent) != 1 || sent[0].Text != "Let me look." {
		t.Fatalf("new messages %+v, want only the draft", sent)
	}
	// The status line comes in the same instant as the text (no clock step): it waits;
	// the next text, two seconds on, is shown, then the answer.
	want := []string{"terminal-1:Found", "terminal-1:Found it."}
	if got := editTexts(d.ch.Edits()); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("edits %q, want %q", got, want)
	}
}

func TestDraftLeftByAToolOnlyTurnSaysWhatWasDone(t *testing.T) {
	d := newDraftEnv(t, true)
	d.model.steps = []streamStep{
		{resp: core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "c1", Name: "list_files", Args: json.RawMessage(`{}`)}}}},
		{resp: core.ModelResponse{}}, // an empty answer: nothing to say, no final text
	}
	d.say("look around")
	sent := d.ch.Replies()
	if len(sent) != 1 || sent[0].Text != "listing files…" {
		t.Fatalf("new messages %+v, want the status draft", sent)
	}
	if got := editTexts(d.ch.Edits()); len(got) != 1 || got[0] != "terminal-1:Worked on: listing files" {
		t.Errorf("edits %q, want the closing line", got)
	}
}

func TestDraftOffKeepsPlainReplies(t *testing.T) {
	d := newDraftEnv(t, false)
	d.model.steps = []streamStep{{shown: []string{"Hel", "Hello"}, gap: 2 * time.Second, resp: core.ModelResponse{Text: "Hello."}}}
	d.say("hi")
	if sent := d.ch.Replies(); len(sent) != 1 || sent[0].Text != "Hello." || sent[0].ReplaceID != "" {
		t.Fatalf("replies %+v, want the answer alone", sent)
	}
	if e := d.ch.Edits(); len(e) != 0 {
		t.Errorf("edits %+v, want none", e)
	}
}

// A process killed after the answer's commit, before its delivery, leaves the row; the next
// start delivers it as an edit of the draft (its id is in the row), never as a second copy.
func TestDraftAnswerDeliveredAfterRestartEditsTheDraft(t *testing.T) {
	d := newDraftEnv(t, true)
	down := errors.New("platform down")
	d.model.steps = []streamStep{{
		shown: []string{"Almost", "Almost there"}, gap: 2 * time.Second,
		resp:  core.ModelResponse{Text: "Almost there: done."},
		after: func() { d.ch.FailEdit(down); d.ch.FailSend(down) },
	}}
	d.say("finish it")
	rows := d.unsent()
	if len(rows) != 1 || rows[0].Reply.ReplaceID != "terminal-1" || rows[0].Reply.Text != "Almost there: done." {
		t.Fatalf("unsent rows %+v, want the answer replacing the draft terminal-1", rows)
	}
	d.ch.FailEdit(nil)
	d.ch.FailSend(nil)
	if err := d.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.st.Close()
	d.open(true)
	if n, err := d.eng.DeliverUnsent(context.Background(), []string{"terminal"}, time.Hour, nil); err != nil || n != 1 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	if sent := d.ch.Replies(); len(sent) != 1 {
		t.Errorf("new messages %+v, want only the draft", sent)
	}
	edits := editTexts(d.ch.Edits())
	if len(edits) == 0 || edits[len(edits)-1] != "terminal-1:Almost there: done." {
		t.Errorf("edits %q, want the answer last, on the draft", edits)
	}
	if rows := d.unsent(); len(rows) != 0 {
		t.Errorf("unsent rows after the restart %+v", rows)
	}
}
