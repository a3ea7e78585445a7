package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestConfig(t *testing.T) {
	ok := map[string]string{"alice": "a-token-of-16-chars", "bob": "another-16-char-token"}
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"off needs nothing", Config{}, ""},
		{"valid", Config{Enabled: true, Users: ok}, ""},
		{"no users", Config{Enabled: true}, "users has no users configured"},
		{"empty token", Config{Enabled: true, Users: map[string]string{"alice": ""}}, "users.alice has an empty token"},
		{"short token", Config{Enabled: true, Users: map[string]string{"alice": "short"}}, "shorter than 16"},
		{"bad name", Config{Enabled: true, Users: map[string]string{"Alice Smith": "a-token-of-16-chars"}}, "users.Alice Smith is not a user name"},
		{"the terminal's account", Config{Enabled: true, Users: map[string]string{"local": "a-token-of-16-chars"}}, "users.local is the terminal's account"},
		{"negative cap", Config{Enabled: true, Users: ok, MaxStreams: -1}, "max_streams must not be negative"},
		{"shared token", Config{Enabled: true, Users: map[string]string{"alice": "a-token-of-16-chars", "bob": "a-token-of-16-chars"}}, "the same token as alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "a-token-of-16-chars"):
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
	c := Config{Enabled: true, Users: ok}
	c.Defaults()
	if c.SessionTTL != DefaultSessionTTL || c.MaxConversations != DefaultMaxConversations || c.MaxStreams != DefaultMaxStreams || c.MaxMessageBytes != DefaultMaxMessageBytes {
		t.Fatalf("defaults: session_ttl %v, caps %d %d %d", c.SessionTTL, c.MaxConversations, c.MaxStreams, c.MaxMessageBytes)
	}
	d := c.Describe()
	if !strings.Contains(d, "2 users (alice, bob)") || strings.Contains(d, "token-of") {
		t.Fatalf("Describe: %q", d)
	}
	if _, err := New(Config{Enabled: true}, Deps{Store: nil}); err == nil {
		t.Fatal("New with an invalid config succeeded")
	}
}

// recorder is a Handler that records messages and reports each handled at once.
type recorder struct {
	mu   sync.Mutex
	msgs []core.Message
}

func (r *recorder) EnqueueThen(_ context.Context, m core.Message, then func(error)) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	then(nil)
}

func (r *recorder) got() []core.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.Message(nil), r.msgs...)
}

func runWith(t *testing.T, e *env, h channels.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.web.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

var optionButton = regexp.MustCompile(`name="kind" value="answer"><input type="hidden" name="approval" value="q1"><input type="hidden" name="value" value="([^"]+)"><button type="submit" class="option">`)

func TestQuestionOptionsAndNudges(t *testing.T) {
	e := bareEnv(t)
	rec := &recorder{}
	runWith(t, e, rec)
	alice := e.signIn("alice")
	a := address("alice", "q")
	ctx := context.Background()
	_, err := e.web.Send(ctx, core.Reply{To: a, Kind: core.ReplyQuestion, Text: "Which **format**?", Buttons: []core.Button{
		{Label: "Keep a Changelog", Action: core.Action{Kind: core.ActionAnswer, ApprovalID: "q1", Value: "1"}},
		{Label: "Plain list", Action: core.Action{Kind: core.ActionAnswer, ApprovalID: "q1", Value: "2"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.web.Send(ctx, core.Reply{To: a, Kind: core.ReplyNudge, Text: "Plan v1 has waited 10 min."}); err != nil {
		t.Fatal(err)
	}
	page := alice.get("/c/q")
	if m := optionButton.FindAllStringSubmatch(page, -1); len(m) != 2 {
		t.Fatalf("want two option buttons, page: %s", page)
	}
	if !strings.Contains(page, "<strong>format</strong>") || !strings.Contains(page, `class="item nudge"`) || !strings.Contains(page, "Reminder") {
		t.Fatalf("the question in markdown and the nudge marked as a reminder: %s", page)
	}
	res := alice.post("/c/q/actions", url.Values{"kind": {"answer"}, "approval": {"q1"}, "value": {"2"}})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("answering: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the answer", func() bool { return len(rec.got()) == 1 })
	m := rec.got()[0]
	if m.Action == nil || m.Action.Kind != core.ActionAnswer || m.Action.ApprovalID != "q1" || m.Action.Value != "2" ||
		m.Sender.ID != "alice" || m.Address != a || !m.Direct || m.ID == "" {
		t.Fatalf("the answer reached the engine as %+v (action %+v)", m, m.Action)
	}
	if res := alice.post("/c/q/actions", url.Values{"kind": {"delete-everything"}, "approval": {"q1"}}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown action: %d, want 400", res.StatusCode)
	}
}

// A decision made elsewhere (here: the dashboard) reaches an open chat page as an update of
// the plan's card, with its buttons gone.
func TestDecisionElsewhereUpdatesTheCard(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	s := e.pendingPlan(alice, "c3", "Prune old branches", "List merged branches")
	items, last := e.web.convo(context.Background(), address("alice", "c3")).snapshot()
	if len(items) == 0 {
		t.Fatal("no items")
	}
	res, r := alice.openStream(t, "c3", e.web.eventID(last), "")
	defer res.Body.Close()
	if res := alice.post("/dashboard/actions", url.Values{"session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}}); res.StatusCode != http.StatusNoContent {
		t.Fatalf("accepting from the dashboard: %d %s", res.StatusCode, body(res))
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ev := readEvent(t, r)
		if ev.name == "card" && strings.Contains(ev.data, "running step 1 of 1") {
			if strings.Contains(ev.data, `class=\"accept\"`) {
				t.Fatalf("the accepted card still has buttons: %s", ev.data)
			}
			return
		}
	}
	t.Fatal("no card update with the decision")
}

// After a restart (a new channel over the same store) a sign-in still holds, the page is
// rebuilt from the store with the plan card and its buttons, and a stream that resumes
// with an id of the previous process is told to reload.
func TestRestartRebuildsFromStore(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	e.pendingPlan(alice, "c4", "Archive old logs", "Move logs older than 30 days")
	_, last := e.web.convo(context.Background(), address("alice", "c4")).snapshot()
	oldID := e.web.eventID(last)

	again, err := New(Config{Enabled: true, Users: testUsers}, Deps{Store: e.st, Approvers: []string{"web:alice"}})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = serve(t, again)
	e.web = again
	page := alice.get("/c/c4") // the same cookie jar: the sign-in survives
	for _, want := range []string{"Archive old logs", ">waiting for approval<", `class="accept"`, "Move logs older than 30 days"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the rebuilt page lacks %q: %s", want, page)
		}
	}
	res, r := alice.openStream(t, "c4", "", oldID)
	defer res.Body.Close()
	if ev := readEvent(t, r); ev.name != "reload" {
		t.Fatalf("resuming from the previous process: %+v, want reload", ev)
	}
}

func TestNotRunning(t *testing.T) {
	e := bareEnv(t)
	e.web.startWait = 0
	alice := e.signIn("alice")
	e.makeConversation("alice", "down")
	res := alice.post("/c/down/messages", url.Values{"text": {"hello?"}})
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("posting while the channel is not running: %d, want 503", res.StatusCode)
	}
	shown := e.web.shown(address("alice", "down"))
	if len(shown) != 2 || !strings.Contains(shown[0], "hello?") || !strings.Contains(shown[1], "did not reach the gateway") {
		t.Fatalf("the page shows %q", shown)
	}
}

// TestCardSaysEveryGrant: a plan's card lists every grant in words, the MCP tools it may
// call included, not only the files it may change.
func TestCardSaysEveryGrant(t *testing.T) {
	e := newEnv(t, "web:alice")
	p := core.Plan{ID: "p1", SessionID: "web:x:y", Version: 1, Status: core.PlanAccepted, Body: plan.Body{
		Title: "Write the record", Steps: []plan.Step{{ID: "1", Text: "Write it"}},
		Scope: plan.Scope{AllowedPaths: []string{"README.md"}, AllowedTools: []string{"crm__write"}, MaxFilesChanged: 3}}}
	got := string(e.web.renderCard(context.Background(), p, "alice"))
	for _, want := range []string{
		"<dt>May change</dt><dd>README.md</dd>",
		"<dt>Commands</dt><dd>none (only a plan whose scope allows ** and forbids nothing may run them)</dd>",
		"<dt>Tools</dt><dd>may call crm__write</dd>",
		"<dt>Network</dt><dd>none; the MCP tools above act through their servers, which may reach it</dd>",
		"<dt>Budget</dt><dd>may change at most 3 files in all, counted by plangate from the workspace</dd>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("card lacks %q:\n%s", want, got)
		}
	}
}

// TestCardSaysTheIntent: the card shows the plan's risk level, expected outcome and
// non-goals in one line, escaped, and no such line for a plan that states none.
func TestCardSaysTheIntent(t *testing.T) {
	e := newEnv(t, "web:alice")
	p := core.Plan{ID: "p1", SessionID: "web:x:y", Version: 1, Status: core.PlanPending, Body: plan.Body{
		Title: "Move the API", Steps: []plan.Step{{ID: "1", Text: "Move it"}},
		Risk: plan.RiskHigh, ExpectedOutcome: "Clients use <v2>", NonGoals: []string{"the CLI"}}}
	got := string(e.web.renderCard(context.Background(), p, "alice"))
	if want := `<p class="intent">Risk: high · Outcome: Clients use &lt;v2&gt; · Not doing: the CLI</p>`; !strings.Contains(got, want) {
		t.Errorf("card lacks %q:\n%s", want, got)
	}
	p.Body.Risk, p.Body.ExpectedOutcome, p.Body.NonGoals = "", "", nil
	if got := string(e.web.renderCard(context.Background(), p, "alice")); strings.Contains(got, `class="intent"`) {
		t.Errorf("a plan without intent has an intent line:\n%s", got)
	}
}
