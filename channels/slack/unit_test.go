package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

func TestButtonRoundTrip(t *testing.T) {
	long := strings.Repeat("x", maxButtonValue)
	tests := []struct {
		name   string
		action core.Action
		option int
		want   button
	}{
		{"accept", core.Action{Kind: core.ActionAccept, ApprovalID: "abc234"}, 0, button{kind: core.ActionAccept, approval: "abc234"}},
		{"revise", core.Action{Kind: core.ActionRevise, ApprovalID: "abc234"}, 0, button{kind: core.ActionRevise, approval: "abc234"}},
		{"auto", core.Action{Kind: core.ActionAuto, ApprovalID: "abc234"}, 0, button{kind: core.ActionAuto, approval: "abc234"}},
		{"undo", core.Action{Kind: core.ActionUndo, ApprovalID: "abc234"}, 0, button{kind: core.ActionUndo, approval: "abc234"}},
		{"answer", core.Action{Kind: core.ActionAnswer, ApprovalID: "q1", Value: "Blue: the sky"}, 2, button{kind: core.ActionAnswer, approval: "q1", value: "Blue: the sky"}},
		{"answer too long for a value goes by number", core.Action{Kind: core.ActionAnswer, ApprovalID: "q1", Value: long}, 3, button{kind: core.ActionAnswer, approval: "q1", value: "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, value, ok := buttonValue(tt.action, tt.option)
			if !ok {
				t.Fatal("not encodable")
			}
			if len(value) > maxButtonValue || len(id) > 255 {
				t.Fatalf("action id %d bytes, value %d bytes: over Slack's limits", len(id), len(value))
			}
			got, ok := parseButton(id, value)
			if !ok || got != tt.want {
				t.Fatalf("parseButton(%q, %q) = %+v, %v; want %+v", id, value, got, ok, tt.want)
			}
		})
	}
}

func TestParseButtonRefuses(t *testing.T) {
	tests := []struct{ id, value string }{
		{"other_app", "abc"},
		{actionAccept, ""},
		{actionAccept, "has space"},
		{actionAccept, "sep:arated"},
		{actionAccept, strings.Repeat("a", 65)},
		{actionAnswer + "1", "q1"},
		{actionAnswer + "1", "q1:x:Red"},
		{actionAnswer + "1", "q1:0:Red"},
		{actionAnswer + "1", "q1:01:Red"},
		{actionAnswer + "2", "q1:1:Red"}, // number and action id disagree
		{actionAnswer + "1", "bad id:1:Red"},
	}
	for _, tt := range tests {
		t.Run(tt.id+"="+tt.value, func(t *testing.T) {
			if b, ok := parseButton(tt.id, tt.value); ok {
				t.Errorf("parseButton accepted %+v", b)
			}
		})
	}
	if _, _, ok := buttonValue(core.Action{Kind: core.ActionAccept, ApprovalID: "x y"}, 0); ok {
		t.Error("buttonValue encoded an approval id with a space")
	}
	if _, _, ok := buttonValue(core.Action{Kind: "launch", ApprovalID: "x"}, 0); ok {
		t.Error("buttonValue encoded an unknown action")
	}
}

func TestGroupLimits(t *testing.T) {
	section := strings.Repeat("a", maxSection)
	buttons := []slackgo.Block{slackgo.NewActionBlock(decideBlock)}
	tests := []struct {
		name      string
		sections  int
		size      int
		extra     []slackgo.Block
		wantMsgs  int
		wantFirst int // sections in the first message
	}{
		{"one", 1, 10, nil, 1, 1},
		{"13 full sections fit 40,000", 13, maxSection, nil, 1, 13},
		{"14 full sections do not", 14, maxSection, nil, 2, 13},
		{"50 small sections fit", 50, 10, nil, 1, 50},
		{"51 small sections do not", 51, 10, nil, 2, 50},
		{"buttons take a block", 50, 10, buttons, 2, 49},
		{"nothing", 0, 0, nil, 0, 0},
		{"only buttons", 0, 0, buttons, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss []string
			for range tt.sections {
				ss = append(ss, section[:tt.size])
			}
			msgs := group(ss, tt.extra, false, "fallback")
			if len(msgs) != tt.wantMsgs {
				t.Fatalf("%d messages, want %d", len(msgs), tt.wantMsgs)
			}
			if len(msgs) == 0 {
				return
			}
			if got := len(msgs[0].sections); got != tt.wantFirst {
				t.Errorf("first message has %d sections, want %d", got, tt.wantFirst)
			}
			total := 0
			for i, m := range msgs {
				if n := len(m.blocks()); n > maxBlocks {
					t.Errorf("message %d has %d blocks", i, n)
				}
				size := 0
				for _, s := range m.sections {
					size += channels.UTF16Len(s)
				}
				if size > maxMessage {
					t.Errorf("message %d has %d characters", i, size)
				}
				if (len(m.extra) > 0) != (i == len(msgs)-1 && len(tt.extra) > 0) {
					t.Errorf("message %d extra %d, want the buttons on the last only", i, len(m.extra))
				}
				if m.fallback == "" {
					t.Errorf("message %d has no notification text", i)
				}
				total += len(m.sections)
			}
			if tt.sections > 0 && total != tt.sections {
				t.Errorf("%d sections in all, want %d", total, tt.sections)
			}
		})
	}
}

func TestLayoutEscapesAndSplits(t *testing.T) {
	md := "Ping <!channel> & @here: **now**\n\n" + strings.Repeat("🙂 emoji ", 900)
	msgs := layout(md, nil)
	joined := ""
	for _, m := range msgs {
		for _, s := range m.sections {
			if channels.UTF16Len(s) > maxSection {
				t.Errorf("section of %d UTF-16 units", channels.UTF16Len(s))
			}
			joined += s
		}
	}
	if strings.Contains(joined, "<!channel>") || strings.Contains(joined, "@here") {
		t.Errorf("a broadcast mention survived: %q", joined[:80])
	}
	if !strings.Contains(joined, "*now*") {
		t.Errorf("bold was not converted: %q", joined[:80])
	}
	if !strings.Contains(msgs[0].fallback, "Ping") || strings.Contains(msgs[0].fallback, "<!channel>") {
		t.Errorf("fallback %q", msgs[0].fallback)
	}
}

func TestCleanText(t *testing.T) {
	c := &Channel{botUser: "UBOT"}
	tests := []struct{ in, want string }{
		{"<@UBOT> /plan status", "/plan status"},
		{"<@UBOT|plangate>   hello", "hello"},
		{"hey <@UBOT> look", "hey <@UBOT> look"},
		{"a &lt;b&gt; &amp;amp;", "a <b> &amp;"},
		{"<@UOTHER> hi", "<@UOTHER> hi"},
	}
	for _, tt := range tests {
		if got := c.cleanText(tt.in); got != tt.want {
			t.Errorf("cleanText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTSTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"1700000000.000100", time.Unix(1700000000, 100_000)},
		{"1700000000", time.Unix(1700000000, 0)},
		{"1700000000.5", time.Unix(1700000000, 500_000_000)},
		{"", time.Time{}},
		{"x.1", time.Time{}},
		{"-5.1", time.Time{}},
	}
	for _, tt := range tests {
		if got := tsTime(tt.in); !got.Equal(tt.want) {
			t.Errorf("tsTime(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestSlashThread(t *testing.T) {
	if got := slashThread(json.RawMessage(`{"command":"/plan","thread_ts":"1.2"}`)); got != "1.2" {
		t.Errorf("got %q", got)
	}
	if got := slashThread(json.RawMessage(`{"command":"/plan"}`)); got != "" {
		t.Errorf("got %q", got)
	}
	if got := slashThread(json.RawMessage(`[1,2]`)); got != "" {
		t.Errorf("got %q", got)
	}
}

func TestPacer(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPacer(tuning{postEvery: time.Second, burst: 2})
	p.Now = func() time.Time { return now }
	waits := []time.Duration{p.Reserve("C1"), p.Reserve("C1"), p.Reserve("C1"), p.Reserve("C2")}
	want := []time.Duration{0, 0, time.Second, 0}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("reserve %d waits %v, want %v", i, waits[i], want[i])
		}
	}
	p.Block("C2", 5*time.Second)
	if w := p.Reserve("C2"); w < 5*time.Second {
		t.Errorf("after a 429 of 5s C2 waits %v", w)
	}
	if w := newPacer(tuning{}).Reserve("C1"); w != 0 {
		t.Errorf("unpaced reserve waits %v", w)
	}
}

func TestSeenSet(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newSeenSet(time.Minute)
	s.now = func() time.Time { return now }
	if !s.first("event:1", "msg:C:1") {
		t.Fatal("a new event was taken as seen")
	}
	if s.first("event:1") {
		t.Error("the same event id again was not recognised")
	}
	if s.first("event:2", "msg:C:1") {
		t.Error("the same message under another event id was not recognised")
	}
	now = now.Add(2 * time.Minute)
	if !s.first("event:1") {
		t.Error("an event id was remembered past its time")
	}
}

func TestScrubKeepsTypes(t *testing.T) {
	c := &Channel{cfg: Config{BotToken: "xoxb-1-SECRET", AppToken: "xapp-2-SECRET"}}
	raw := fmt.Errorf("posting with xoxb-1-SECRET and %s: %w", "xapp-2-SECRET", &slackgo.RateLimitedError{RetryAfter: 3 * time.Second})
	err := c.scrub(raw)
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("scrubbed error still has a token: %v", err)
	}
	var rl *slackgo.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Error("the rate limit error is not reachable after scrubbing")
	}
	if errors.Unwrap(err) != nil {
		t.Error("the scrubbed error offers its chain")
	}
	se := c.scrub(slackgo.SlackErrorResponse{Err: "invalid_blocks"})
	if !isSlackError(se, "invalid_blocks") {
		t.Error("a Slack error code is not reachable after scrubbing")
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{slackgo.StatusCodeError{Code: http.StatusBadGateway}, true},
		{slackgo.StatusCodeError{Code: http.StatusForbidden}, false},
		{slackgo.SlackErrorResponse{Err: "internal_error"}, true},
		{slackgo.SlackErrorResponse{Err: "channel_not_found"}, false},
		{errors.New("boom"), false},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestViewAnswer(t *testing.T) {
	cb := slackgo.InteractionCallback{Type: slackgo.InteractionTypeViewSubmission}
	cb.View.CallbackID = reviseCallback
	cb.View.State = &slackgo.ViewState{Values: map[string]map[string]slackgo.BlockAction{feedbackBlock: {feedbackAction: {Value: "  "}}}}
	if viewAnswer(cb) == nil {
		t.Error("blank feedback was accepted")
	}
	cb.View.State.Values[feedbackBlock][feedbackAction] = slackgo.BlockAction{Value: "more tests"}
	if got := viewAnswer(cb); got != nil {
		t.Errorf("feedback answered %v, want an empty ack", got)
	}
	cb.View.CallbackID = "someone_else"
	if got := viewAnswer(cb); got != nil {
		t.Errorf("another modal answered %v", got)
	}
}

func TestThreadLink(t *testing.T) {
	c := &Channel{workspace: "https://acme.slack.com/"}
	if got := c.threadLink("C1", "1700000000.000100"); got != "https://acme.slack.com/archives/C1/p1700000000000100" {
		t.Errorf("got %q", got)
	}
	if got := (&Channel{}).threadLink("C1", "1.2"); got != "" {
		t.Errorf("without a workspace URL got %q", got)
	}
}
