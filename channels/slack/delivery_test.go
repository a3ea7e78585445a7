package slack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// proposeIn starts a session in ch with a mention and waits for its first plan.
func (e *env) proposeIn(ch, user string, responses ...core.ModelResponse) (thread string, s core.Session) {
	e.TB.Helper()
	thread = e.api.userTS()
	e.Model.Push(e.sid(ch, thread), responses...)
	e.api.mentionTS(thread, ch, user, "/plan on do the thing", "")
	return thread, e.waitPhase(ch, thread, core.PhaseAwaitingApproval)
}

func TestStaleButton(t *testing.T) {
	e := newEnv(t)
	e.api.name(alice, "alice")
	thread, s1 := e.proposeIn(general, alice, channeltest.Proposal("First", "One"), channeltest.Proposal("Second", "One", "Two"))
	v1 := e.planMsg(general, s1.ApprovalID)
	e.api.waitAck(e.api.slash(general, alice, "revise make it two steps", thread))
	e.api.waitText(general, "Sent plan v1 back")
	s2 := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	e.Idle()
	before := len(e.api.messages(general))

	// The v1 message lost its buttons, but an old client can still show them.
	e.api.click(v1, alice, actionAccept, s1.ApprovalID)
	note := e.api.waitEphemeral(alice, `Plan v1 "First" was already decided (revised by alice); nothing changed.`)
	if note.Channel != general || note.Thread != thread {
		t.Errorf("ephemeral in %s/%s, want the plan's thread %s/%s", note.Channel, note.Thread, general, thread)
	}
	e.Idle()
	if got := e.waitPhase(general, thread, core.PhaseAwaitingApproval); got.ApprovalID != s2.ApprovalID {
		t.Errorf("pending approval %s, want v2's %s untouched", got.ApprovalID, s2.ApprovalID)
	}
	if after := len(e.api.messages(general)); after != before {
		t.Errorf("a stale click posted %d public messages, want none", after-before)
	}

	// A button plangate did not make, and one with a mangled value.
	e.api.click(v1, alice, "someone_elses_button", "x")
	e.api.click(v1, alice, actionAccept, "bad value!")
	e.api.waitFor("two invalid-button notes", func() bool {
		n := 0
		for _, eph := range e.api.ephemerals {
			if eph.User == alice && strings.Contains(eph.Text, noteInvalid) {
				n++
			}
		}
		return n == 2
	})
}

func TestNonApproverClick(t *testing.T) {
	e := newEnv(t, func(e *env) { e.Core.Approvers = []string{"slack:" + alice} })
	e.api.name(alice, "alice")
	e.api.name(bob, "bob")
	thread, s := e.proposeIn(general, alice, channeltest.Proposal("Guarded", "Step"))
	plan := e.planMsg(general, s.ApprovalID)

	e.api.click(plan, bob, actionAccept, s.ApprovalID)
	e.api.waitEphemeral(bob, "Only approvers can decide on plans here (bob is not one)")
	e.Idle()
	if got := e.waitPhase(general, thread, core.PhaseAwaitingApproval); got.ApprovalID != s.ApprovalID {
		t.Fatalf("approval changed to %s after a non-approver's click", got.ApprovalID)
	}
	if len(e.current(general, plan.TS).buttons()) != 3 {
		t.Errorf("buttons after a refused click: %q, want them all still there", e.current(general, plan.TS).buttons())
	}

	// The id in the payload decides, not the name: a bob called "alice" is still bob.
	e.api.name(bob, "alice")
	e.Channel.namesMu.Lock()
	clear(e.Channel.names)
	e.Channel.namesMu.Unlock()
	e.api.click(plan, bob, actionAccept, s.ApprovalID)
	e.api.waitEphemeral(bob, "Only approvers can decide on plans here (alice is not one)")
	e.Idle()
	e.waitPhase(general, thread, core.PhaseAwaitingApproval)

	e.api.click(plan, alice, actionAccept, s.ApprovalID)
	e.waitPhase(general, thread, core.PhaseExecuting)
	e.api.waitText(general, "accepted by alice")
}

func TestRetriedEventHandledOnce(t *testing.T) {
	e := newEnv(t)
	thread := e.api.userTS()
	inner := map[string]any{
		"type": "app_mention", "user": alice, "text": "<@UBOT> count me once",
		"ts": thread, "channel": general, "event_ts": thread,
	}
	var dups atomic.Int32
	e.Channel.NoteInbound(func(outcome string) {
		if outcome == channels.InboundDuplicate {
			dups.Add(1)
		}
	})
	first := e.api.resend("EvRETRY1", inner, 0)
	e.api.waitAck(first)
	e.api.waitText(general, "ok")
	e.Idle()
	for attempt := 1; attempt <= 2; attempt++ {
		e.api.waitAck(e.api.resend("EvRETRY1", inner, attempt))
	}
	// The same message as a DM event would be: another event id, the same ts.
	e.api.waitAck(e.api.resend("EvOTHER", inner, 0))
	e.api.waitAck(e.api.mention(general, alice, "a later message", thread).Envelope)
	// "ok" was posted already for the first message, so wait for the second model call
	// itself: an ack comes before the message reaches the engine.
	deadline := time.Now().Add(5 * time.Second)
	for e.Model.CallCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	e.Idle()
	if n := e.Model.CallCount(); n != 2 {
		t.Errorf("model called %d times, want 2 (the retries of the first message handled once)", n)
	}
	if n := dups.Load(); n != 3 {
		t.Errorf("%d dropped duplicates reported, want 3 (two retries and the same message under another event id)", n)
	}
}

func TestLongReplySplit(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 0; b.Len() < 40_000; i++ {
		b.WriteString("Paragraph ")
		b.WriteString(strings.Repeat("word ", 40+i%7))
		b.WriteString("end.\n\n")
	}
	long := b.String()[:40_000]
	thread := e.api.userTS()
	e.Model.Push(e.sid(general, thread), core.ModelResponse{Text: long})
	e.api.mentionTS(thread, general, alice, "write a lot", "")
	e.api.waitText(general, "Paragraph")
	e.Idle()

	var total int
	msgs := e.api.messages(general)
	for _, m := range msgs {
		if len(m.Blocks) > maxBlocks {
			t.Errorf("message with %d blocks, limit %d", len(m.Blocks), maxBlocks)
		}
		size := 0
		for _, bl := range m.Blocks {
			n := channels.UTF16Len(bl.Text.Text)
			if n > maxSection {
				t.Errorf("section of %d characters, limit %d", n, maxSection)
			}
			size += n
			total += strings.Count(bl.Text.Text, "word")
		}
		if size > maxMessage {
			t.Errorf("message of %d characters, limit %d", size, maxMessage)
		}
		if m.Thread != thread {
			t.Errorf("part posted in thread %q, want %q", m.Thread, thread)
		}
		if m.Text == "" {
			t.Error("a part without notification text")
		}
	}
	if want := strings.Count(long, "word"); total != want {
		t.Errorf("the parts hold %d words, want all %d", total, want)
	}
	sections := 0
	for _, m := range msgs {
		sections += len(m.Blocks)
	}
	if sections < 14 {
		t.Errorf("%d sections for 40,000 characters, want at least 14", sections)
	}
}

func TestLongReplyAsFile(t *testing.T) {
	e := newEnv(t, func(e *env) { e.cfg.LongReplyAsFile = 500 })
	thread := e.api.userTS()
	long := "Summary line of a long answer.\n\n" + strings.Repeat("detail ", 200)
	e.Model.Push(e.sid(general, thread), core.ModelResponse{Text: long})
	e.api.mentionTS(thread, general, alice, "write a lot", "")
	f := e.api.waitFile(general, "reply.md")
	if f.Thread != thread || !strings.Contains(f.Comment, "Summary line of a long answer.") {
		t.Errorf("reply file %+v, want it in the thread with the first line as its comment", f)
	}
	e.api.mu.Lock()
	var data string
	for _, d := range e.api.uploads {
		data = string(d)
	}
	e.api.mu.Unlock()
	if data != long {
		t.Errorf("uploaded %d bytes, want the whole reply (%d)", len(data), len(long))
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	e := newEnv(t)
	e.api.limit("chat.postMessage", 2, 1)
	thread := e.api.userTS()
	e.api.mentionTS(thread, general, alice, "hello", "")
	e.api.waitText(general, "ok")
	calls := e.api.callsOf("chat.postMessage")
	if len(calls) != 3 {
		t.Fatalf("%d chat.postMessage calls, want 2 answered 429 and 1 that went through", len(calls))
	}
	// Retry-After 2 then 1, with a second counted as 10ms here.
	if gap := calls[1].At.Sub(calls[0].At); gap < 20*time.Millisecond {
		t.Errorf("retried after %v, want at least Retry-After (2 units = 20ms)", gap)
	}
	if !strings.Contains(e.Logs.String(), "slack rate limit") {
		t.Error("the rate limit was not logged")
	}

	// More 429s than attempts: the failure is logged with the channel and the reason.
	e.api.limit("chat.postMessage", 1, 1, 1, 1, 1)
	e.api.mention(general, alice, "again", thread)
	e.Idle()
	e.api.waitFor("the give-up log", func() bool {
		return strings.Contains(e.Logs.String(), "giving up") || strings.Contains(e.Logs.String(), "slack request failed")
	})
	logs := e.Logs.String()
	if !strings.Contains(logs, "slack_channel="+general) || !strings.Contains(logs, "rate limit exceeded") {
		t.Errorf("the dropped reply's log does not name the channel and the reason:\n%s", logs)
	}
}

func TestFormattingFallback(t *testing.T) {
	e := newEnv(t)
	e.api.failNext("chat.postMessage", "invalid_blocks")
	thread := e.api.userTS()
	e.Model.Push(e.sid(general, thread), core.ModelResponse{Text: "Here is **bold** and `code`."})
	e.api.mentionTS(thread, general, alice, "hi", "")
	m := e.api.waitText(general, "Here is")
	if m.Blocks[0].Text.Type != "plain_text" {
		t.Errorf("fallback block type %q, want plain_text", m.Blocks[0].Text.Type)
	}
}

func TestPlanFileUploadFails(t *testing.T) {
	e := newEnv(t)
	e.api.failNext("files.completeUploadExternal", "not_in_channel")
	_, s := e.proposeIn(general, alice, channeltest.Proposal("No file", "Step"))
	plan := e.planMsg(general, s.ApprovalID)
	if !strings.Contains(plan.shown(), "could not be uploaded") {
		t.Errorf("plan message %q, want it to say the file is missing", plan.shown())
	}
}

func TestAllowedChannels(t *testing.T) {
	e := newEnv(t, func(e *env) { e.cfg.AllowedChannels = []string{general} })
	e.api.waitAck(e.api.mention("C0ELSEWHERE", alice, "hello", "").Envelope)
	e.api.mention(general, alice, "hello", "")
	e.api.waitText(general, "ok")
	e.Idle()
	if len(e.api.messages("C0ELSEWHERE")) != 0 || e.Model.CallCount() != 1 {
		t.Errorf("the bot answered in a channel that is not allowed (model calls %d)", e.Model.CallCount())
	}
	e.api.waitAck(e.api.slash("C0ELSEWHERE", alice, "status", ""))
	e.api.waitEphemeral(alice, noteNotHere)
}

func TestUnreadableEnvelopeIsAcked(t *testing.T) {
	e := newEnv(t)
	id := e.api.envelope("events_api", map[string]any{"type": "event_callback", "event": map[string]any{"type": "no_such_event"}}, 0)
	e.api.waitAck(id)
	e.api.mention(general, alice, "still here", "")
	e.api.waitText(general, "ok")
}

func TestAcksBeforeTheEngine(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	e.Model.Block(block)

	thread := e.api.userTS()
	busy := e.api.mentionTS(thread, general, alice, "think hard", "")
	e.api.waitAck(busy.Envelope)
	// The agent is busy in that thread; more envelopes for it, and others, keep coming.
	var envs []string
	for range 5 {
		envs = append(envs, e.api.mention(general, alice, "and this", thread).Envelope)
		envs = append(envs, e.api.slash(general, alice, "status", thread))
		envs = append(envs, e.api.mention("C0OTHER", bob, "elsewhere", "").Envelope)
	}
	for _, id := range envs {
		e.api.waitAck(id)
	}
	if n := e.Model.Finished(); n != 0 {
		t.Fatalf("%d model calls finished before the acks; the acks must not wait for the engine", n)
	}
	close(block)
	e.api.waitText(general, "ok")
	e.Idle()
}

func TestBadAppToken(t *testing.T) {
	api := newFakeSlack(t)
	api.rejectApp = true
	logs := &channeltest.LogBuffer{}
	cfg := Config{BotToken: api.botToken, AppToken: api.appToken, APIURL: api.URL()}
	c, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, channeltest.NewLogger(logs), testTuning())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Run(ctx, channelsHandlerNop{})
	if err == nil || !strings.Contains(err.Error(), "channels.slack.app_token") {
		t.Fatalf("Run returned %v, want an error naming the app token setting", err)
	}
	assertNoTokens(t, api, err.Error()+logs.String())
}

func TestBadBotToken(t *testing.T) {
	api := newFakeSlack(t)
	logs := &channeltest.LogBuffer{}
	cfg := Config{BotToken: "xoxb-wrong-SECRETbot", AppToken: api.appToken, APIURL: strings.TrimSuffix(api.URL(), "/")}
	_, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, channeltest.NewLogger(logs), testTuning())
	if err == nil || !strings.Contains(err.Error(), "channels.slack.bot_token") {
		t.Fatalf("New returned %v, want an error naming the bot token setting", err)
	}
	assertNoTokens(t, api, err.Error()+logs.String())
	if strings.Contains(err.Error()+logs.String(), "xoxb-wrong") {
		t.Error("the wrong token appears in the error or the log")
	}

	for _, cfg := range []Config{{AppToken: "xapp-1"}, {BotToken: "xoxb-1"}} {
		if _, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning()); err == nil {
			t.Errorf("New(%+v) succeeded without both tokens", cfg.APIURL)
		}
	}
}

// channelsHandlerNop is a Handler that does nothing.
type channelsHandlerNop struct{}

func (channelsHandlerNop) EnqueueThen(_ context.Context, _ core.Message, then func(error)) { then(nil) }

func TestQuestionButtons(t *testing.T) {
	e := newEnv(t)
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.ToolCall("ask_user_question", map[string]any{"question": "Which color?", "options": []string{"Red", "Blue"}}),
		core.ModelResponse{Text: "Blue it is."})
	e.api.mentionTS(thread, general, alice, "/plan on paint it", "")
	q := e.api.waitText(general, "Which color?")
	bs := q.buttons()
	if len(bs) != 2 || !strings.HasPrefix(bs[1], actionAnswer+"2=") || !strings.HasSuffix(bs[1], ":2:Blue") {
		t.Fatalf("question buttons %q, want two answer buttons carrying their option", bs)
	}
	action, value, _ := strings.Cut(bs[1], "=")
	e.api.click(q, alice, action, value)
	e.api.waitText(general, "Answer recorded: Blue")
	e.api.waitText(general, "Blue it is.")
	if got := e.Model.LastUser(sid); !strings.Contains(got, "[QUESTION_ANSWER]: Blue") {
		t.Errorf("the model saw %q, want the answer", got)
	}
	// The same question's buttons again: the engine says it is answered, to the clicker.
	e.Idle()
	e.api.click(q, alice, action, value)
	e.api.waitEphemeral(alice, "already answered")
}

// gate is a Handler that holds the first message until released.
type gate struct {
	release chan struct{}
	mu      sync.Mutex
	got     []string
}

// EnqueueThen records m and, for the first, returns only once released.
func (g *gate) EnqueueThen(_ context.Context, m core.Message, then func(error)) {
	g.mu.Lock()
	first := len(g.got) == 0
	g.got = append(g.got, m.Text)
	g.mu.Unlock()
	if first {
		<-g.release
	}
	then(nil)
}

func TestShutdownHandlesWhatWasAcked(t *testing.T) {
	api := newFakeSlack(t)
	cfg := Config{BotToken: api.botToken, AppToken: api.appToken, APIURL: api.URL()}
	c, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning())
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, g) }()
	api.waitAck(api.mention(general, alice, "first", "").Envelope)
	api.waitAck(api.mention(general, alice, "second", "").Envelope)
	cancel()
	close(g.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(g.got, []string{"first", "second"}) {
		t.Errorf("handled %q, want both acknowledged messages, in order", g.got)
	}
}

func TestReconnectOnDisconnect(t *testing.T) {
	e := newEnv(t)
	e.api.mention(general, alice, "before", "")
	e.api.waitText(general, "ok")
	e.api.outbox <- []byte(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fake"}}`)
	e.api.waitFor("a second connection", func() bool {
		n := 0
		for _, c := range e.api.calls {
			if c.Method == "apps.connections.open" {
				n++
			}
		}
		return n >= 2
	})
	s := e.api.mention(general, alice, "after", "")
	e.api.waitAck(s.Envelope)
	e.api.waitFor("the reply after reconnecting", func() bool {
		n := 0
		for _, m := range e.api.msgs {
			if m.Channel == general && m.shown() == "ok" {
				n++
			}
		}
		return n == 2
	})
}

// A post that stays rate limited past the attempts returns Slack's last Retry-After for
// the outbox to wait (core.SendDelay); it is not a refusal.
func TestRateLimitedSendSaysHowLongToWait(t *testing.T) {
	e := newEnv(t)
	e.api.limit("chat.postMessage", 7, 7, 7, 7, 7, 7, 7, 7, 7, 7)
	_, err := e.Channel.Send(context.Background(), core.Reply{To: e.addr(general, ""), Text: "hi"})
	if err == nil {
		t.Fatal("Send succeeded although Slack answered 429")
	}
	if got := core.SendDelay(err); got != 7*10*time.Millisecond {
		t.Errorf("SendDelay(%v) = %v, want Retry-After 7 (70ms here)", err, got)
	}
	if errors.Is(err, core.ErrRefused) {
		t.Errorf("a rate limit reads as a refusal: %v", err)
	}
}
