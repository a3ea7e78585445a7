package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// longText is n characters of paragraphs, with a few characters outside the BMP so that
// UTF-16 and UTF-8 lengths differ.
func longText(n int) string {
	var b strings.Builder
	words := []string{"plan", "gate", "step", "review", "ünïcode", "測試", "🙂"}
	count := 0
	for i := 0; count < n; i++ {
		w := words[i%len(words)]
		sep := " "
		if i%40 == 39 {
			sep = "\n\n"
		}
		piece := w + sep
		if r := []rune(piece); count+len(r) > n {
			piece = string(r[:n-count])
		}
		b.WriteString(piece)
		count += len([]rune(piece))
	}
	return b.String()
}

func TestLongReplySplitsAtTelegramLimit(t *testing.T) {
	e := newEnv(t)
	reply := longText(9000)
	e.Model.Push(e.sessionID(private), core.ModelResponse{Text: reply})
	e.api.say(private, alice, "tell me everything")
	e.api.waitFor("the whole reply", func() bool { return len(e.api.callsL("sendMessage")) >= 3 })
	e.Idle()
	sends := e.api.callsOf("sendMessage")
	if len(sends) != 3 {
		t.Fatalf("%d sendMessage calls, want 3 for a 9,000-character reply", len(sends))
	}
	var shown strings.Builder
	for i, c := range sends {
		if n := channels.UTF16Len(c.Params["text"]); n > maxText {
			t.Errorf("message %d is %d UTF-16 units, over %d", i+1, n, maxText)
		}
		shown.WriteString(c.Params["text"])
	}
	if got, want := strings.Join(strings.Fields(shown.String()), " "), strings.Join(strings.Fields(reply), " "); got != want {
		t.Errorf("the parts do not add up to the reply: got %d characters, want %d", len([]rune(got)), len([]rune(want)))
	}
}

func TestLongReplyAsFile(t *testing.T) {
	e := newEnv(t, func(e *env) { e.cfg.LongReplyAsFile = 500 })
	reply := "Summary first.\n\n" + longText(1000)
	e.Model.Push(e.sessionID(private), core.ModelResponse{Text: reply})
	e.api.say(private, alice, "write a lot")
	e.waitDoc(private, `^reply\.md$`)
	e.Idle()
	docs := e.api.callsOf("sendDocument")
	if len(docs) != 1 || docs[0].Data != reply {
		t.Fatalf("documents %d, want one reply.md holding the whole reply", len(docs))
	}
	if c := docs[0].Params["caption"]; !strings.Contains(c, "Summary first.") || channels.UTF16Len(c) > 300 {
		t.Errorf("caption %q, want a short caption from the first line", c)
	}
	if n := len(e.api.callsOf("sendMessage")); n != 0 {
		t.Errorf("%d messages besides the file, want none", n)
	}
}

func TestRejectedEntitiesAreResentAsPlainText(t *testing.T) {
	e := newEnv(t)
	e.api.fail("sendMessage", -1, 400, "Bad Request: can't parse entities: Unsupported start tag \"b\" at byte offset 0", 0,
		func(p map[string]string) bool { return p["parse_mode"] == "HTML" && strings.Contains(p["text"], "<b>") })
	e.Model.Push(e.sessionID(private), core.ModelResponse{Text: "**Important**: read [the guide](https://example.org/guide) & *relax*"})
	e.api.say(private, alice, "anything important?")
	got := e.api.waitText(private, "Important")
	e.Idle()
	if got.Mode != "" || strings.Contains(got.Text, "<") {
		t.Errorf("fallback message %q in mode %q, want plain text", got.Text, got.Mode)
	}
	for _, want := range []string{"Important: read the guide (https://example.org/guide) & relax"} {
		if got.Text != want {
			t.Errorf("fallback text %q, want %q", got.Text, want)
		}
	}
	if !strings.Contains(e.Logs.String(), "sending plain text") {
		t.Error("the fallback was not logged")
	}
}

func TestTooManyRequestsWaitsAndRetries(t *testing.T) {
	e := newEnv(t)
	e.api.fail("sendMessage", 1, 429, "Too Many Requests: retry after 3", 3, nil)
	e.api.say(private, alice, "hello")
	e.api.waitText(private, "ok")
	e.Idle()
	if n := len(e.api.callsOf("sendMessage")); n != 2 {
		t.Errorf("%d sendMessage calls, want the 429 and one retry", n)
	}
	if n := countContaining(e.api.messages(private), "ok"); n != 1 {
		t.Errorf("the reply was shown %d times, want once", n)
	}
}

func TestServerErrorsRetryWithBackoff(t *testing.T) {
	e := newEnv(t)
	e.api.fail("getUpdates", 2, 502, "Bad Gateway", 0, nil)
	e.api.fail("sendMessage", 2, 500, "Internal Server Error", 0, nil)
	e.api.say(private, alice, "hello")
	e.api.waitText(private, "ok")
	e.Idle()
	if n := len(e.api.callsOf("sendMessage")); n != 3 {
		t.Errorf("%d sendMessage calls, want two failures and a success", n)
	}
}

func TestSendFailureIsReportedWithChatNotToken(t *testing.T) {
	e := newEnv(t)
	e.api.fail("sendMessage", -1, 400, "Bad Request: chat not found", 0, nil)
	_, err := e.Channel.Send(context.Background(), core.Reply{To: e.addr(999, 0), Text: "hi"})
	if err == nil {
		t.Fatal("Send succeeded although Telegram refused it")
	}
	if !strings.Contains(err.Error(), "999") || !strings.Contains(err.Error(), "chat not found") {
		t.Errorf("error %q, want the chat and the reason", err)
	}
	if strings.Contains(err.Error(), e.api.token) || strings.Contains(e.Logs.String(), e.api.token) {
		t.Error("the bot token leaked into an error or the log")
	}
	if !strings.Contains(e.Logs.String(), "chat=999") {
		t.Errorf("the failure was not logged with its chat: %s", e.Logs.String())
	}
}

func TestTokenNeverInErrors(t *testing.T) {
	const token = "999:SECRET-token-value"
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}
	unauthorized := newFakeAPI(t) // knows a different token: answers 404 like Telegram
	cases := []struct {
		name string
		url  string
	}{
		{"connection refused", closed()},
		{"token rejected", unauthorized.URL()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &channeltest.LogBuffer{}
			log := channeltest.NewLogger(logs)
			tune := testTuning()
			tune.retry.Attempts = 2
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := newChannel(ctx, Config{Token: token, APIURL: tc.url, PollTimeout: time.Second}, &channeltest.MemState{}, log, tune)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the token: %v", err)
			}
			if strings.Contains(logs.String(), "SECRET") {
				t.Errorf("log shows the token: %s", logs.String())
			}
			if tc.name == "token rejected" && !strings.Contains(err.Error(), "check channels.telegram.token") {
				t.Errorf("error %q does not say what to check", err)
			}
		})
	}
	t.Run("scrubbed errors keep their type", func(t *testing.T) {
		c := &Channel{token: token}
		err := c.scrub(&bot.TooManyRequestsError{Message: "slow down " + token, RetryAfter: 2})
		var tm *bot.TooManyRequestsError
		if !errors.As(err, &tm) || tm.RetryAfter != 2 || strings.Contains(err.Error(), token) {
			t.Errorf("scrubbed 429 %v lost its type or kept the token", err)
		}
		if errors.Unwrap(err) != nil {
			t.Error("a scrubbed error hands out the original through Unwrap")
		}
	})
}

func TestDuplicateUpdateHandledOnce(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(e.sessionID(private), channeltest.Proposal("Once", "Only"))
	id := e.api.say(private, alice, "/plan on do it once")
	e.waitDoc(private, `-v1\.md$`)
	e.Idle()
	raw := e.api.rawUpdate(id)
	e.api.redeliver(id, raw)
	e.api.say(private, alice, "/plan status")
	e.api.waitText(private, "phase: awaiting_approval")
	e.Idle()
	if n := e.Model.CallCount(); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
	msgs := e.api.messages(private)
	if n := countContaining(msgs, "Plan mode is on"); n != 1 {
		t.Errorf("%q shown %d times, want once", "Plan mode is on", n)
	}
}

func TestRestartContinuesFromSavedOffset(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(e.sessionID(private), channeltest.Proposal("Survives", "Only"))
	first := e.api.say(private, alice, "/plan on survive a restart")
	e.waitDoc(private, `-v1\.md$`)
	e.Stop()

	next := e.api.say(private, alice, "/plan status")
	before := len(e.api.callsOf("getUpdates"))
	e.Start()
	e.api.waitText(private, "phase: awaiting_approval")
	e.Idle()
	polls := e.api.callsOf("getUpdates")[before:]
	if len(polls) == 0 || polls[0].Params["offset"] != strconv.FormatInt(next, 10) {
		t.Errorf("the restarted adapter first asked for updates from %v, want %d (one past the handled %d)", polls[0].Params["offset"], next, first)
	}
	if n := e.Model.CallCount(); n != 1 {
		t.Errorf("the model was called %d times, want once: the first update was handled again", n)
	}
	if n := countContaining(e.api.messages(private), "Plan mode is on"); n != 1 {
		t.Errorf("%q shown %d times, want once", "Plan mode is on", n)
	}
}

// TestRestartReplaysUnhandledUpdates kills the process while updates wait behind a
// running turn: Telegram has been told they were received, so only the saved inbox can
// bring them back. The one the engine had committed (its turn called a tool, which
// stores the message before the tool runs) is not handled twice.
func TestRestartReplaysUnhandledUpdates(t *testing.T) {
	e := newEnv(t)
	sid := e.sessionID(private)
	block := make(chan struct{})
	e.Model.Push(sid, core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "c1", Name: "no_such_tool", Args: []byte(`{}`)}}})
	var calls atomic.Int32
	parked := make(chan struct{})
	e.Model.Hook(func(core.ModelRequest) {
		if n := calls.Add(1); n > 1 { // the turn's second call, after the tool round committed
			if n == 2 {
				close(parked)
			}
			<-block
		}
	})

	first := e.api.say(private, alice, "first message")
	second := e.api.say(private, alice, "second message")
	e.waitInbox(func(s savedInbox) bool { return s.Next > second && len(s.Pending) == 2 })
	// One more poll confirms both at the (fake) Telegram.
	e.api.waitFor("a poll past both updates", func() bool {
		for _, c := range e.api.callsL("getUpdates") {
			if c.Params["offset"] == strconv.FormatInt(second+1, 10) {
				return true
			}
		}
		return false
	})

	// The crash comes once the first turn is parked in its second model call: the first
	// message and its tool round are committed, and the old engine writes nothing more.
	// Crashing sooner (under load the inbox is saved well before the turn gets there)
	// would leave the old engine, which the test keeps alive where a killed process is
	// gone, racing the restarted one over the first message: both would handle it.
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		close(block) // so that the engine can stop
		t.Fatalf("the first turn never reached its second model call; the model was called %d times", calls.Load())
	}

	// The process dies: its adapter stops, its engine is left hanging in the model.
	crashed := e.Engine
	e.Crash()
	e.Model = channeltest.NewModel()
	e.Model.Push(sid, core.ModelResponse{Text: "answer to the second"})
	e.Start()
	e.api.waitText(private, "answer to the second")
	e.Idle()

	if n := e.Model.CallCount(); n != 1 {
		t.Errorf("the restarted engine called the model %d times, want once (for the second message only)", n)
	}
	last := e.Model.Calls()[0].Messages[len(e.Model.Calls()[0].Messages)-1]
	if !strings.Contains(last.Content, "second message") {
		t.Errorf("the restarted turn was about %q, want the second message", last.Content)
	}
	e.waitInbox(func(s savedInbox) bool { return len(s.Pending) == 0 && s.Handled >= second })
	_ = first

	close(block) // let the dead engine's goroutines end
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = crashed.Wait(ctx)
}

func TestOtherBotsCommandsIgnored(t *testing.T) {
	e := newEnv(t)
	for _, chat := range []int64{group, private} {
		e.api.say(chat, alice, "/plan@OtherBot status")
		e.api.say(chat, alice, "/plan@planGATEbot status") // bot names are case-insensitive
		e.api.waitText(chat, "phase: off")
	}
	e.Idle()
	for _, chat := range []int64{group, private} {
		if n := countContaining(e.api.messages(chat), "phase:"); n != 1 {
			t.Errorf("chat %d: %d status replies, want 1 (the other bot's command is not ours)", chat, n)
		}
	}
}

func TestGroupMessagesNeedMention(t *testing.T) {
	t.Run("required", func(t *testing.T) {
		e := newEnv(t)
		e.Model.Push(e.sessionID(group), core.ModelResponse{Text: "first answer"}, core.ModelResponse{Text: "second answer"})
		e.api.say(group, alice, "just chatting among people")
		e.api.say(group, alice, "@PlanGateBot what is the plan?")
		reply := e.api.waitText(group, "first answer")
		e.api.say(group, bob, "and the details?", replyTo(reply.ID))
		e.api.waitText(group, "second answer")
		e.Idle()
		if n := e.Model.CallCount(); n != 2 {
			t.Fatalf("model called %d times, want 2 (mention and reply, not the chatter)", n)
		}
		msgs := e.Model.Calls()[0].Messages
		if got := msgs[len(msgs)-1].Content; !strings.Contains(got, "what is the plan?") || strings.Contains(got, "@PlanGateBot") || strings.Contains(got, "chatting") {
			t.Errorf("the model saw %q, want the question without the leading mention", got)
		}
	})
	t.Run("not required", func(t *testing.T) {
		e := newEnv(t, func(e *env) { e.cfg.RequireMentionInGroups = false })
		e.api.say(group, alice, "just chatting among people")
		e.api.waitText(group, "ok")
		if n := e.Model.CallCount(); n != 1 {
			t.Errorf("model called %d times, want 1", n)
		}
	})
	t.Run("chat not allowed", func(t *testing.T) {
		e := newEnv(t, func(e *env) { e.cfg.AllowedChats = []int64{private} })
		e.api.say(group, alice, "/plan@PlanGateBot status")
		e.api.say(private, alice, "/plan status")
		e.api.waitText(private, "phase: off")
		e.Idle()
		if n := len(e.api.messages(group)); n != 0 {
			t.Errorf("%d messages in a chat that is not allowed", n)
		}
	})
}

// waitInbox waits until the saved inbox satisfies cond.
func (e *env) waitInbox(cond func(savedInbox) bool) savedInbox {
	e.TB.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var s savedInbox
		v, ok, err := e.Store.ChannelState(context.Background(), Name, strconv.FormatInt(e.api.botID, 10), inboxKey)
		if err != nil {
			e.TB.Fatal(err)
		}
		if ok {
			if err := json.Unmarshal([]byte(v), &s); err != nil {
				e.TB.Fatal(err)
			}
			if cond(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			e.TB.Fatalf("the saved inbox never got there; it is %s", v)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestPlanDeliveryFallbacksAndRetiring(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	to := e.addr(group, 0)
	buttons := func(approval string) []core.Button {
		return []core.Button{
			{Label: "Accept", Action: core.Action{Kind: core.ActionAccept, ApprovalID: approval}},
			{Label: "Revise", Action: core.Action{Kind: core.ActionRevise, ApprovalID: approval}},
		}
	}
	t.Run("missing plan file goes as text with its buttons", func(t *testing.T) {
		r := core.Reply{To: to, Kind: core.ReplyPlan, Text: "Plan v1 — Lost file (1 step)\nDecide: /plan accept",
			Attachments: []core.File{{Name: "plan-v1.md", Path: t.TempDir() + "/gone.md"}}, Buttons: buttons("lost1")}
		id, err := e.Channel.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		m := e.msg(group, mustAtoi(t, id))
		if m.Doc != "" || !strings.Contains(m.Text, "Lost file") || len(keyboardData(t, m)) != 2 {
			t.Fatalf("fallback message %+v, want the plan text with both buttons", m)
		}
		if _, err := e.Hub.Send(ctx, core.Reply{To: to, Kind: core.ReplyDecided, Ref: "lost1", Text: "Plan v1 \"Lost file\" — accepted by alice"}); err != nil {
			t.Fatal(err)
		}
		if m := e.msg(group, m.ID); len(keyboardData(t, m)) != 0 {
			t.Errorf("buttons still on the text plan after the decision: %s", m.Markup)
		}
	})
	t.Run("a checklist too long for a caption follows as a message", func(t *testing.T) {
		text := "Plan v2 — Long (60 steps) (pending)\n" + strings.Repeat("[ ] a step with a reasonably long description\n", 60)
		r := core.Reply{To: to, Kind: core.ReplyPlan, Text: text,
			Attachments: []core.File{{Name: "plan-v2.md", Data: []byte("# plan")}}, Buttons: buttons("long2")}
		id, err := e.Channel.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		doc := e.msg(group, mustAtoi(t, id))
		if doc.Doc != "plan-v2.md" || utf16Len(doc.Text) > maxCaption || len(keyboardData(t, doc)) != 2 {
			t.Fatalf("document %q caption of %d units, want the plan file with its buttons", doc.Doc, utf16Len(doc.Text))
		}
		msgs := e.api.messages(group)
		if last := msgs[len(msgs)-1]; last.ID == doc.ID || strings.Count(last.Text, "[ ] a step") != 60 {
			t.Errorf("the whole checklist did not follow the document")
		}
		// A nudge with the same buttons is retired along with the document.
		nudge, err := e.Channel.Send(ctx, core.Reply{To: to, Kind: core.ReplyNudge, Text: "Plan v2 has waited 30m.", Buttons: buttons("long2")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Hub.Send(ctx, core.Reply{To: to, Kind: core.ReplyDecided, Ref: "long2", Text: "Plan v2 \"Long\" — accepted by alice"}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{doc.ID, mustAtoi(t, nudge)} {
			if m := e.msg(group, id); len(keyboardData(t, m)) != 0 {
				t.Errorf("message %d kept its buttons after the decision", id)
			}
		}
		if m := e.msg(group, doc.ID); !strings.HasSuffix(m.Text, "accepted by alice") || utf16Len(m.Text) > maxCaption {
			t.Errorf("decided caption %q (%d units)", m.Text, utf16Len(m.Text))
		}
	})
}

// A send that fails for good says what the outbox should do with the reply: a 429 carries
// Telegram's retry_after (core.SendDelay), a refusal is core.ErrRefused, a 5xx neither.
func TestSendErrorsSayWhetherToRetry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		code       int
		desc       string
		retryAfter int
		delay      time.Duration
		refused    bool
	}{
		{"429", 429, "Too Many Requests: retry after 7", 7, 7 * 10 * time.Millisecond, false},
		{"500", 500, "Internal Server Error", 0, 0, false},
		{"400", 400, "Bad Request: chat not found", 0, 0, true},
		{"403", 403, "Forbidden: bot was blocked by the user", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.api.fail("sendMessage", -1, tc.code, tc.desc, tc.retryAfter, nil)
			_, err := e.Channel.Send(context.Background(), core.Reply{To: e.addr(private, 0), Text: "hi"})
			if err == nil {
				t.Fatal("Send succeeded although Telegram refused it")
			}
			if got := core.SendDelay(err); got != tc.delay {
				t.Errorf("SendDelay(%v) = %v, want %v", err, got, tc.delay)
			}
			if got := errors.Is(err, core.ErrRefused); got != tc.refused {
				t.Errorf("errors.Is(%v, core.ErrRefused) = %v, want %v", err, got, tc.refused)
			}
		})
	}
}
