package telegram

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

func testChannel(t *testing.T) (*Channel, *channeltest.LogBuffer) {
	t.Helper()
	logs := &channeltest.LogBuffer{}
	c := &Channel{botID: 424242, account: "424242", username: "PlanGateBot", tune: testTuning(),
		log: channeltest.NewLogger(logs), st: &channeltest.MemState{}, toasts: newToastBoard(), allowed: map[int64]bool{}}
	c.pace = newPacer(c.tune)
	c.approvals = channels.NewLedger[sentMsg](c.st, Name, c.account, c.log)
	return c, logs
}

func TestParseText(t *testing.T) {
	c, _ := testChannel(t)
	cmd := func(n int) models.MessageEntity {
		return models.MessageEntity{Type: models.MessageEntityTypeBotCommand, Offset: 0, Length: n}
	}
	mention := func(off, n int) models.MessageEntity {
		return models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: off, Length: n}
	}
	cases := []struct {
		name string
		text string
		ents []models.MessageEntity
		want parsed
	}{
		{"our command with bot name", "/plan@PlanGateBot on tidy", []models.MessageEntity{cmd(17)},
			parsed{text: "/plan on tidy", planCommand: true, addressed: true}},
		{"bot name is case-insensitive", "/plan@plangatebot status", []models.MessageEntity{cmd(17)},
			parsed{text: "/plan status", planCommand: true, addressed: true}},
		{"another bot's command", "/plan@OtherBot on tidy", []models.MessageEntity{cmd(14)},
			parsed{otherBot: true}},
		{"bare command", "/PLAN status", []models.MessageEntity{cmd(5)},
			parsed{text: "/PLAN status", planCommand: true}},
		{"other command", "/start", []models.MessageEntity{cmd(6)}, parsed{text: "/start"}},
		{"other command for us", "/start@PlanGateBot", []models.MessageEntity{cmd(18)},
			parsed{text: "/start", addressed: true}},
		{"leading mention then command", "@PlanGateBot /plan status", []models.MessageEntity{mention(0, 12), {Type: models.MessageEntityTypeBotCommand, Offset: 13, Length: 5}},
			parsed{text: "/plan status", planCommand: true, mentioned: true}},
		// 🙂 is two UTF-16 units: the mention starts at unit 6, byte 8.
		{"mention after an emoji", "🙂 hi @PlanGateBot", []models.MessageEntity{mention(6, 12)},
			parsed{text: "🙂 hi @PlanGateBot", mentioned: true}},
		{"mention of someone else", "👍 @OtherBot hi", []models.MessageEntity{mention(3, 9)},
			parsed{text: "👍 @OtherBot hi"}},
		{"text mention of the bot", "hey PlanGate", []models.MessageEntity{{Type: models.MessageEntityTypeTextMention, Offset: 4, Length: 8, User: &models.User{ID: 424242}}},
			parsed{text: "hey PlanGate", mentioned: true}},
		{"entity past the end is ignored", "hi", []models.MessageEntity{mention(1, 40)}, parsed{text: "hi"}},
		{"no entities: another bot's command", "/plan@OtherBot status", nil, parsed{otherBot: true}},
		{"no entities: our command", "/plan@PlanGateBot status", nil, parsed{text: "/plan status", planCommand: true, addressed: true}},
		{"not /plan", "/planner", []models.MessageEntity{cmd(8)}, parsed{text: "/planner"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.parseText(tc.text, tc.ents); got != tc.want {
				t.Errorf("parseText(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

func TestFromMessageAddressesAndGating(t *testing.T) {
	c, _ := testChannel(t)
	c.cfg.RequireMentionInGroups = true
	from := &models.User{ID: 11, FirstName: "Alice", LastName: "A"}
	cases := []struct {
		name    string
		m       models.Message
		handled bool
		want    core.Address
		direct  bool
	}{
		{"private chat", models.Message{Chat: models.Chat{ID: 5, Type: models.ChatTypePrivate}, Text: "hi"},
			true, core.Address{Channel: Name, Account: "424242", Chat: "5"}, true},
		{"group chatter", models.Message{Chat: models.Chat{ID: -100, Type: models.ChatTypeSupergroup}, Text: "hi all"},
			false, core.Address{}, false},
		{"forum topic is its own session", models.Message{Chat: models.Chat{ID: -200, Type: models.ChatTypeSupergroup, IsForum: true},
			MessageThreadID: 9, IsTopicMessage: true, Text: "/plan", Entities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 5}}},
			true, core.Address{Channel: Name, Account: "424242", Chat: "-200", Thread: "9"}, false},
		{"reply thread of an ordinary group is not", models.Message{Chat: models.Chat{ID: -100, Type: models.ChatTypeSupergroup},
			MessageThreadID: 9, Text: "/plan", Entities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 5}}},
			true, core.Address{Channel: Name, Account: "424242", Chat: "-100"}, false},
		{"reply to the bot in a group", models.Message{Chat: models.Chat{ID: -100, Type: models.ChatTypeSupergroup}, Text: "yes",
			ReplyToMessage: &models.Message{ID: 3, From: &models.User{ID: 424242, IsBot: true}}},
			true, core.Address{Channel: Name, Account: "424242", Chat: "-100"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.m.From, tc.m.Date = from, 1700000000
			got, ok := c.fromMessage(context.Background(), 77, &tc.m)
			if ok != tc.handled {
				t.Fatalf("handled %v, want %v", ok, tc.handled)
			}
			if !ok {
				return
			}
			if got.Address != tc.want || got.Direct != tc.direct || got.ID != "77" {
				t.Errorf("message %+v, want address %+v direct %v id 77", got, tc.want, tc.direct)
			}
			if !reflect.DeepEqual(got.Sender, core.Person{ID: "11", Name: "Alice A"}) || !got.Time.Equal(time.Unix(1700000000, 0)) || !got.Mentioned {
				t.Errorf("sender %+v time %v mentioned %v", got.Sender, got.Time, got.Mentioned)
			}
		})
	}
}

func TestCallbackData(t *testing.T) {
	approval := "abcdefghij234567"
	for _, tc := range []struct {
		name   string
		action core.Action
		option int
		want   string
		ok     bool
	}{
		{"accept", core.Action{Kind: core.ActionAccept, ApprovalID: approval}, 0, "a:" + approval, true},
		{"revise", core.Action{Kind: core.ActionRevise, ApprovalID: approval}, 0, "r:" + approval, true},
		{"auto", core.Action{Kind: core.ActionAuto, ApprovalID: approval}, 0, "u:" + approval, true},
		{"undo", core.Action{Kind: core.ActionUndo, ApprovalID: approval}, 0, "n:" + approval, true},
		{"answer", core.Action{Kind: core.ActionAnswer, Value: "a very long option text that would not fit in sixty-four bytes at all"}, 3, "q:3", true},
		{"approval too long for 64 bytes", core.Action{Kind: core.ActionAccept, ApprovalID: strings.Repeat("a", 63)}, 0, "", false},
		{"approval with separators", core.Action{Kind: core.ActionAccept, ApprovalID: "a:b"}, 0, "", false},
		{"no kind", core.Action{ApprovalID: approval}, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := callbackData(tc.action, tc.option)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("callbackData = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			if !ok {
				return
			}
			if len(got) > maxCallbackData {
				t.Fatalf("%q is %d bytes", got, len(got))
			}
			b, ok := parseCallback(got)
			if !ok || b.kind != tc.action.Kind || b.approval != tc.action.ApprovalID || (b.kind == core.ActionAnswer && b.option != tc.option) {
				t.Errorf("parseCallback(%q) = %+v, %v: does not round-trip", got, b, ok)
			}
		})
	}
	for _, bad := range []string{"", "a", "a:", "x:" + approval, "q:0", "q:01", "q:-1", "q:100", "q:two", "a:" + approval + "!", strings.Repeat("a", 65), "a:b c"} {
		if b, ok := parseCallback(bad); ok {
			t.Errorf("parseCallback(%q) = %+v, want refused", bad, b)
		}
	}
}

func TestKeyboardLayout(t *testing.T) {
	c, logs := testChannel(t)
	kb := c.keyboard([]core.Button{
		{Label: "Accept", Action: core.Action{Kind: core.ActionAccept, ApprovalID: "ab12"}},
		{Label: "Revise", Action: core.Action{Kind: core.ActionRevise, ApprovalID: "ab12"}},
		{Label: "Broken", Action: core.Action{Kind: core.ActionAuto, ApprovalID: strings.Repeat("x", 70)}},
		{Label: "First option", Action: core.Action{Kind: core.ActionAnswer, Value: "First option"}},
		{Label: "", Action: core.Action{Kind: core.ActionAnswer, Value: "Second"}},
	})
	data, err := json.Marshal(kb)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inline_keyboard":[[{"text":"Accept","callback_data":"a:ab12"},{"text":"Revise","callback_data":"r:ab12"}],[{"text":"First option","callback_data":"q:1"}],[{"text":"answer","callback_data":"q:2"}]]}`
	if string(data) != want {
		t.Errorf("keyboard\n got %s\nwant %s", data, want)
	}
	if !strings.Contains(logs.String(), "Broken") {
		t.Error("the button that did not fit was not logged")
	}
	if c.keyboard(nil) != nil {
		t.Error("no buttons must give an untyped nil markup")
	}
}

func TestBuildCaption(t *testing.T) {
	long := strings.Repeat("Step <b> & more ", 40) // grows when escaped
	cases := []struct {
		name     string
		lines    []string
		decision string
		shown    int
		complete bool
		contains []string
	}{
		{"short", []string{"Plan v1 — A & B", "Summary <here>"}, "", 2, true, []string{"<b>Plan v1 — A &amp; B</b>", "Summary &lt;here&gt;"}},
		{"too many lines", []string{"Title", long, long, long}, "", 2, false, []string{"<b>Title</b>", "…"}},
		{"decision always fits", []string{"Title", long, long}, "Plan v1 \"T\" — accepted by alice", 2, false, []string{"<i>Plan v1 &#34;T&#34; — accepted by alice</i>"}},
		{"huge title", []string{strings.Repeat("&", 3000)}, "", 1, false, []string{"…</b>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, shown, complete := buildCaption(tc.lines, tc.decision)
			if n := channels.UTF16Len(got); n > maxCaption {
				t.Errorf("caption is %d UTF-16 units, over %d", n, maxCaption)
			}
			if len(shown) != tc.shown || complete != tc.complete {
				t.Errorf("showed %d lines (complete %v), want %d (%v)", len(shown), complete, tc.shown, tc.complete)
			}
			if _, problem := checkText(got, "HTML"); problem != "" {
				t.Errorf("caption is not valid Telegram HTML: %s", problem)
			}
			for _, s := range tc.contains {
				if !strings.Contains(got, s) {
					t.Errorf("caption %q lacks %q", got, s)
				}
			}
		})
	}
}

func TestHTMLToPlain(t *testing.T) {
	for in, want := range map[string]string{
		`<b>Bold</b> &amp; <i>it</i>`:                          "Bold & it",
		`see <a href="https://x.org/a?b=1&amp;c=2">docs</a>!`:  "see docs (https://x.org/a?b=1&c=2)!",
		`<a href="https://x.org">https://x.org</a>`:            "https://x.org",
		`<pre><code class="language-go">x &lt; y</code></pre>`: "x < y",
		`broken <b tag`: "broken <b tag",
		`1 &lt; 2`:      "1 < 2",
	} {
		if got := htmlToPlain(in); got != want {
			t.Errorf("htmlToPlain(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPacer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tune := defaultTuning()
	p := newPacer(tune)
	p.Now = func() time.Time { return now }
	waits := func(chat int64, n int) []time.Duration {
		var out []time.Duration
		for range n {
			out = append(out, p.Reserve(chat))
		}
		return out
	}
	// A private chat: a burst of three, then one a second.
	if got := waits(5, 5); got[0] != 0 || got[2] != 0 || got[3] != time.Second || got[4] != 2*time.Second {
		t.Errorf("private chat waits %v, want 0 0 0 1s 2s", got)
	}
	// A group: a burst of three, then one every three seconds (20 a minute).
	if got := waits(-100, 4); got[3] != 3*time.Second {
		t.Errorf("group waits %v, want the fourth after 3s", got)
	}
	// Chats do not slow each other down (within the global 30/s).
	if got := p.Reserve(6); got != 0 {
		t.Errorf("a fresh chat waits %v", got)
	}
	// A 429 holds the chat back for retry_after.
	p.Block(7, 5*time.Second)
	if got := p.Reserve(7); got != 5*time.Second {
		t.Errorf("after a 429 the chat waits %v, want 5s", got)
	}
	// Time passing refills the bucket.
	now = now.Add(time.Minute)
	if got := waits(5, 3); got[0] != 0 || got[2] != 0 {
		t.Errorf("after a quiet minute waits %v, want a fresh burst", got)
	}
}

func TestInboxRoundTrip(t *testing.T) {
	c, logs := testChannel(t)
	ctx := context.Background()
	in, err := c.loadInbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(id int64) json.RawMessage {
		return json.RawMessage(`{"update_id":` + strconv.FormatInt(id, 10) + `}`)
	}
	const base = 1_000_000
	for id := int64(base + 10); id <= base+12; id++ {
		if !in.receive(id, raw(id)) {
			t.Fatalf("update %d refused", id)
		}
	}
	if in.receive(base+11, raw(base+11)) || in.receive(base+5, raw(base+5)) {
		t.Error("an update delivered again was accepted again")
	}
	in.done(base + 10)
	in.done(base + 12)
	if err := in.flush(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := c.loadInbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.offset() != base+13 {
		t.Errorf("offset after reload %d, want %d", again.offset(), base+13)
	}
	if got := again.replay(); len(got) != 1 || string(got[0]) != string(raw(base+11)) {
		t.Errorf("replay %s, want only update %d", got, base+11)
	}
	v, _, _ := c.st.ChannelState(ctx, Name, c.account, inboxKey)
	var saved savedInbox
	if err := json.Unmarshal([]byte(v), &saved); err != nil || saved.Handled != base+10 {
		t.Errorf("saved %s: handled should be %d, the last of the contiguous run", v, base+10)
	}

	// After a quiet week Telegram starts ids over at a random number: follow it.
	if !again.receive(7, raw(7)) || again.offset() != 8 {
		t.Errorf("an id far below the offset (ids started over) was not followed; offset %d", again.offset())
	}
	if !strings.Contains(logs.String(), "started over") {
		t.Error("the restarted ids were not logged")
	}

	// A damaged record is logged and polling starts over rather than the bot stopping.
	if err := c.st.SetChannelState(ctx, Name, c.account, inboxKey, "{not json"); err != nil {
		t.Fatal(err)
	}
	fresh, err := c.loadInbox(ctx)
	if err != nil || fresh.offset() != 0 || len(fresh.replay()) != 0 {
		t.Errorf("damaged inbox: %v, offset %d", err, fresh.offset())
	}
	if !strings.Contains(logs.String(), "unreadable") {
		t.Error("the damaged inbox was not logged")
	}
}

func TestLabelOf(t *testing.T) {
	for in, want := range map[string]string{
		"Plan v2 — Docs cleanup (3 steps)\nSummary": `plan v2 "Docs cleanup"`,
		"Plan v1 — One (1 step)":                    `plan v1 "One"`,
		"Plan v4 — Shown (pending)\n[ ] a":          `plan v4 "Shown"`,
		"Plan v1 — Title (with) parens (2 steps)":   `plan v1 "Title (with) parens"`,
		"Something else":                            "",
	} {
		if got := labelOf(in); got != want {
			t.Errorf("labelOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClipCountsUTF16(t *testing.T) {
	s := strings.Repeat("🙂", 150) // 300 units
	got := clip(s, maxToast)
	if n := channels.UTF16Len(got); n > maxToast || !strings.HasSuffix(got, "…") {
		t.Errorf("clip gave %d units (%q…)", n, got[:8])
	}
	if clip("short", 10) != "short" {
		t.Error("a short text was changed")
	}
}

func TestToastBoard(t *testing.T) {
	b := newToastBoard()
	a := core.Address{Channel: Name, Account: "1", Chat: "5"}
	other := core.Address{Channel: Name, Account: "1", Chat: "6"}
	accept := b.expect(a, "ap1")
	answer := b.expect(a, "")
	b.observe(core.Reply{To: other, Kind: core.ReplyNotice, Text: "elsewhere"})
	b.observe(core.Reply{To: a, Kind: core.ReplyDecided, Ref: "zzz", Text: "another version"})
	b.observe(core.Reply{To: a, Kind: core.ReplyProgress, Text: "progress is no answer"})
	select {
	case got := <-accept.text:
		t.Fatalf("settled by an unrelated reply: %q", got)
	default:
	}
	b.observe(core.Reply{To: a, Kind: core.ReplyDecided, Ref: "ap1", Text: "Plan v1 \"X\" — accepted by **alice**\nmore"})
	if got := <-accept.text; got != `Plan v1 "X" — accepted by alice` {
		t.Errorf("accept toast %q", got)
	}
	b.observe(core.Reply{To: a, Kind: core.ReplyText, Text: "Answer recorded: Everything"})
	if got := <-answer.text; got != "Answer recorded: Everything" {
		t.Errorf("answer toast %q", got)
	}
	answer.finish() // a second settle is ignored
	if len(b.waiting) != 0 {
		t.Errorf("settled toasts still waiting: %v", b.waiting)
	}
}

func TestEditAndTyping(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	to := e.addr(forum, 4)
	id, err := e.Channel.Send(ctx, core.Reply{To: to, Kind: core.ReplyProgress, Text: "[ ] step one"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Channel.Edit(ctx, id, core.Reply{To: to, Kind: core.ReplyProgress, Text: "[ ] step one"}); err != nil {
		t.Errorf("an edit that changes nothing failed: %v", err)
	}
	if err := e.Channel.Edit(ctx, id, core.Reply{To: to, Kind: core.ReplyProgress, Text: "[x] step one"}); err != nil {
		t.Fatal(err)
	}
	if m := e.msg(forum, mustAtoi(t, id)); m.Text != "[x] step one" || m.Edits != 1 {
		t.Errorf("after the edit the message shows %q (%d edits)", m.Text, m.Edits)
	}
	if err := e.Channel.Edit(ctx, "12345", core.Reply{To: to, Text: "x"}); err == nil {
		t.Error("editing a message that does not exist succeeded")
	}
	if err := e.Channel.Edit(ctx, "not-an-id", core.Reply{To: to, Text: "x"}); err == nil {
		t.Error("editing with a foreign id succeeded")
	}
	if err := e.Channel.Typing(ctx, to); err != nil {
		t.Fatal(err)
	}
	acts := e.api.callsOf("sendChatAction")
	if last := acts[len(acts)-1]; last.Params["action"] != "typing" || last.Params["message_thread_id"] != "4" {
		t.Errorf("chat action %v, want typing in topic 4", last.Params)
	}
	if _, err := e.Channel.Send(ctx, core.Reply{To: core.Address{Channel: "slack", Chat: "C1"}, Text: "x"}); err == nil {
		t.Error("sending to another channel's address succeeded")
	}
	if id, err := e.Hub.Send(ctx, core.Reply{To: to, Kind: core.ReplyDecided, Ref: "never-sent"}); err != nil || id != "" {
		t.Errorf("deciding an unknown approval: %q, %v; want nothing to do", id, err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("id %q: %v", s, err)
	}
	return n
}

func TestSendWithReplaceIDEdits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	to := e.addr(private, 0)
	id, err := e.Channel.Send(ctx, core.Reply{To: to, Kind: core.ReplyProgress, Text: "1 of 2"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Hub.Send(ctx, core.Reply{To: to, Kind: core.ReplyProgress, Text: "2 of 2", ReplaceID: id})
	if err != nil || again != id {
		t.Fatalf("Send with ReplaceID = %q, %v; want the same message %q edited", again, err, id)
	}
	fresh, err := e.Hub.Send(ctx, core.Reply{To: to, Kind: core.ReplyProgress, Text: "after a lost message", ReplaceID: "9999"})
	if err != nil || fresh == "9999" || fresh == "" {
		t.Errorf("Send with an unknown ReplaceID = %q, %v; want a new message", fresh, err)
	}
	if msgs := e.api.messages(private); len(msgs) != 2 || msgs[0].Text != "2 of 2" {
		t.Errorf("chat shows %+v, want the edited message and one new one", msgs)
	}
}
