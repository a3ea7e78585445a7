package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// longReply is about 5,000 characters with a fenced code block across the 2,000 mark.
func longReply() string {
	var b strings.Builder
	b.WriteString("Here is the report.\n\n")
	for b.Len() < 1500 {
		b.WriteString("The quick brown fox jumps over the lazy dog. ")
	}
	b.WriteString("\n\n```go\n")
	for i := 0; b.Len() < 3800; i++ {
		fmt.Fprintf(&b, "fmt.Println(\"line %d of the listing\")\n", i)
	}
	b.WriteString("```\n\n")
	for b.Len() < 5000 {
		b.WriteString("Pack my box with five dozen liquor jugs. ")
	}
	b.WriteString("THE END")
	return b.String()
}

func TestLongReplySplitWithoutBreakingCode(t *testing.T) {
	e := newEnv(t)
	text := longReply()
	e.Model.Push(sid("C1"), core.ModelResponse{Text: text})
	e.fd.say("C1", alice, "write the report", true)
	e.fd.waitText("C1", "THE END")
	e.Idle()
	var parts []shownMsg
	for _, m := range e.fd.shown("C1") {
		if len(parts) > 0 || strings.HasPrefix(m.Content, "Here is the report") {
			parts = append(parts, m)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("the 5,000-character reply came as %d messages, want at least 3", len(parts))
	}
	var joined strings.Builder
	for i, p := range parts {
		if n := channels.UTF16Len(p.Content); n > 2000 {
			t.Errorf("part %d has %d characters", i+1, n)
		}
		if n := strings.Count(p.Content, "```"); n%2 != 0 {
			t.Errorf("part %d has %d code fences: a code block is broken\n%s", i+1, n, p.Content)
		}
		joined.WriteString(p.Content)
	}
	for _, want := range []string{"line 0 of the listing", "line 60 of the listing", "THE END"} {
		if !strings.Contains(joined.String(), want) {
			t.Errorf("the parts lost %q", want)
		}
	}
	checkAllowedMentions(t, e.fd)
}

func TestLongReplyAsFile(t *testing.T) {
	e := newEnv(t, func(e *env) { e.cfg.LongReplyAsFile = 3000 })
	text := longReply()
	e.Model.Push(sid("C1"), core.ModelResponse{Text: text})
	e.fd.say("C1", alice, "write the report", true)
	m := e.fd.waitText("C1", "The full reply is attached (reply.md).")
	e.Idle()
	if len(m.Files) != 1 || m.Files[0].Name != "reply.md" || m.Files[0].Data != text {
		t.Fatalf("long reply message %q has files %v, want reply.md with the whole reply", m.Content, m.Files)
	}
	if !strings.HasPrefix(m.Content, "Here is the report.") {
		t.Errorf("long reply message %q, want it to start with the reply's first line", m.Content)
	}
	for _, s := range e.fd.shown("C1") {
		if strings.Contains(s.Content, "THE END") {
			t.Errorf("the long reply was also sent as text: %.60q", s.Content)
		}
	}
}

func TestMentionsInRepliesAreInert(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(sid("C1"), core.ModelResponse{Text: "Hey @everyone and @here, ask <@&555> or <@222>."})
	e.fd.say("C1", alice, "say hi", true)
	m := e.fd.waitText("C1", "Hey @")
	e.Idle()
	for _, raw := range []string{"@everyone", "@here", "<@&555>", "<@222>"} {
		if strings.Contains(m.Content, raw) {
			t.Errorf("reply %q still holds the live mention %q", m.Content, raw)
		}
	}
	if !strings.Contains(m.Content, "@\u200beveryone") {
		t.Errorf("reply %q, want @everyone neutralised with a zero-width space", m.Content)
	}
	checkAllowedMentions(t, e.fd)
}

func TestGatewayReconnectResumes(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(sid("C1"), core.ModelResponse{Text: "answer one"}, core.ModelResponse{Text: "answer two"}, core.ModelResponse{Text: "answer three"})
	e.fd.say("C1", alice, "one", true)
	e.fd.waitText("C1", "answer one")
	e.Idle()

	e.fd.gw.mu.Lock()
	e.fd.gw.replayDup = true // the resume also sends "one" again
	e.fd.gw.mu.Unlock()
	e.fd.drop()
	e.fd.say("C1", alice, "two", true)
	e.fd.say("C1", alice, "three", true)
	e.fd.waitText("C1", "answer three")
	e.Idle()

	sessions, resumes, _, _ := e.fd.gwStats()
	if sessions != 1 || len(resumes) != 1 {
		t.Errorf("gateway: %d sessions, resumes %v; want the one session resumed once", sessions, resumes)
	}
	var answers []string
	for _, m := range e.fd.shown("C1") {
		if strings.HasPrefix(m.Content, "answer") {
			answers = append(answers, m.Content)
		}
	}
	if want := []string{"answer one", "answer two", "answer three"}; !slices.Equal(answers, want) {
		t.Errorf("answers %q, want %q: nothing lost or doubled", answers, want)
	}
	if n := e.Model.CallCount(); n != 3 {
		t.Errorf("model called %d times, want 3", n)
	}
}

func TestThreadsDMsAndChatter(t *testing.T) {
	e := newEnv(t, func(e *env) { e.cfg.AllowedChannels = []string{"C1", "D1"} })
	e.fd.say("C1", bob, "just chatting, not for the bot", false)
	e.fd.say("C2", alice, "a channel that is not allowed", true)
	e.fd.dispatch("MESSAGE_CREATE", map[string]any{"id": "5", "channel_id": "C1", "guild_id": "G1", "type": 0,
		"content": "<@900> I am another bot", "author": map[string]any{"id": "777", "username": "otherbot", "bot": true},
		"mentions": []any{map[string]any{"id": "900"}}, "timestamp": time.Now().UTC().Format(time.RFC3339)})
	e.fd.say("T1", alice, "hello from a thread", true)
	e.fd.say("D1", bob, "hello in private", false)
	e.fd.say("C1", bob, "/plan status", false)

	e.fd.waitText("T1", "ok")
	e.fd.waitText("D1", "ok")
	e.fd.waitText("C1", "phase: off")
	e.Idle()
	if n := e.Model.CallCount(); n != 2 {
		t.Errorf("model called %d times, want 2 (the thread and the DM)", n)
	}
	for _, a := range []core.Address{addr("C1", "T1"), addr("D1", "")} {
		if _, err := e.Store.Session(context.Background(), a.SessionID()); err != nil {
			t.Errorf("no session for %s: %v", a.SessionID(), err)
		}
	}
	for _, a := range []core.Address{addr("C2", ""), addr("T1", "")} {
		if _, err := e.Store.Session(context.Background(), a.SessionID()); err == nil {
			t.Errorf("a session %s exists, want none", a.SessionID())
		}
	}
	if n := len(e.fd.shown("C2")); n != 0 {
		t.Errorf("the bot answered %d times in a channel that is not allowed", n)
	}
	if s, _ := e.Store.Session(context.Background(), addr("D1", "").SessionID()); s.Owner != bob.id {
		t.Errorf("DM session owner %q, want bob", s.Owner)
	}
}

func TestCommandRegistration(t *testing.T) {
	tests := []struct {
		name   string
		guilds []string
		want   []string
	}{
		{"per guild", []string{"G1", "G2"}, []string{"G1", "G2"}},
		{"global", nil, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(e *env) { e.cfg.GuildIDs = tt.guilds })
			e.fd.waitFor("command registration", func() bool {
				return len(e.fd.callsMatching(`^PUT /api/v9/applications/900/`)) == len(tt.want)
			})
			e.fd.mu.Lock()
			defer e.fd.mu.Unlock()
			for _, g := range tt.want {
				raw, ok := e.fd.commands[g]
				if !ok {
					t.Fatalf("no commands registered for guild %q; have %v", g, e.fd.commands)
				}
				var cmds []struct {
					Name    string `json:"name"`
					Options []struct {
						Name    string `json:"name"`
						Type    int    `json:"type"`
						Options []struct {
							Name     string `json:"name"`
							Required bool   `json:"required"`
							Choices  []struct {
								Value string `json:"value"`
							} `json:"choices"`
						} `json:"options"`
					} `json:"options"`
				}
				if err := json.Unmarshal(raw, &cmds); err != nil || len(cmds) != 1 || cmds[0].Name != "plan" {
					t.Fatalf("registered %s, want the one /plan command (%v)", raw, err)
				}
				var subs []string
				for _, o := range cmds[0].Options {
					subs = append(subs, o.Name)
					switch o.Name {
					case "revise":
						// Optional: a bare revise sends the waiting step comments.
						if len(o.Options) != 1 || o.Options[0].Name != "feedback" || o.Options[0].Required {
							t.Errorf("revise options %+v, want an optional feedback", o.Options)
						}
					case "auto":
						if len(o.Options) != 1 || len(o.Options[0].Choices) != 2 {
							t.Errorf("auto options %+v, want the choices on and off", o.Options)
						}
					case "status":
						if len(o.Options) != 0 {
							t.Errorf("status options %+v, want none", o.Options)
						}
					}
				}
				if want := "status show help on off accept revise answer auto undo nudge"; strings.Join(subs, " ") != want {
					t.Errorf("subcommands %q, want %q", subs, want)
				}
			}
		})
	}
}

func TestBurstOfRepliesUnderRateLimits(t *testing.T) {
	e := newEnv(t)
	e.fd.fail(`^POST /api/v9/channels/C1/messages$`, 4, 429)
	e.fd.fail(`^POST /api/v9/channels/C1/messages$`, 2, 502)
	ctx := context.Background()
	var want []string
	for i := range 12 {
		text := fmt.Sprintf("burst reply %02d", i)
		want = append(want, text)
		if _, err := e.Channel.Send(ctx, core.Reply{To: addr("C1", ""), Text: text}); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	var got []string
	for _, m := range e.fd.shown("C1") {
		if strings.HasPrefix(m.Content, "burst reply") {
			got = append(got, m.Content)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("shown %q, want all 12 in order", got)
	}

	// A reply Discord refuses for good is an error, logged without secrets.
	e.fd.fail(`^POST /api/v9/channels/C1/messages$`, -1, 403)
	_, err := e.Channel.Send(ctx, core.Reply{To: addr("C1", ""), Text: "never shown"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("sending into a refusing channel: %v, want the 403", err)
	}
	if !strings.Contains(e.Logs.String(), "a reply could not be delivered") {
		t.Error("the undelivered reply was not logged")
	}
}

func TestGatewayRefusals(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{4014, "enable the Message Content intent"},
		{4004, "check channels.discord.token"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			fd := newFakeDiscord(t)
			fd.gw.refuse = tt.code
			ch, err := newChannel(context.Background(), Config{Token: fd.token, APIURL: fd.URL()}, &channeltest.MemState{}, nil, testTuning())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = ch.Run(ctx, channels.HandlerFunc(func(context.Context, core.Message) error { return nil }))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want an error saying %q", err, tt.want)
			}
			_, _, intents, tokens := fd.gwStats()
			if want := int64(intents); want&(1<<15) == 0 || want&(1<<9) == 0 || want&(1<<12) == 0 {
				t.Errorf("identify intents %b, want guild messages, direct messages and message content", intents)
			}
			if len(tokens) == 0 || tokens[0] != "Bot "+fd.token {
				t.Errorf("identify token %q, want the bot token", tokens)
			}
		})
	}
}

func TestBadTokenNeverShown(t *testing.T) {
	fd := newFakeDiscord(t)
	const wrong = "wrong.token.VALUE"
	logs := &channeltest.LogBuffer{}
	_, err := newChannel(context.Background(), Config{Token: wrong, APIURL: fd.URL()}, &channeltest.MemState{}, nil, testTuning())
	if err == nil || !strings.Contains(err.Error(), "check channels.discord.token") {
		t.Fatalf("New with a wrong token: %v, want a hint about the token", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(logs.String(), wrong) {
		t.Errorf("the token appears in %q", err)
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Errorf("error %v, want an apiError with status 401", err)
	}
	if _, err := newChannel(context.Background(), Config{Token: "  ", APIURL: fd.URL()}, &channeltest.MemState{}, nil, testTuning()); err == nil {
		t.Error("New accepted an empty token")
	}
	if _, err := newChannel(context.Background(), Config{Token: fd.token, APIURL: "ftp://x"}, &channeltest.MemState{}, nil, testTuning()); err == nil {
		t.Error("New accepted an api_url that is not http(s)")
	}
}
