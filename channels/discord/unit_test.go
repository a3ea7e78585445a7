package discord

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

func TestCustomIDRoundTrip(t *testing.T) {
	tests := []struct {
		action core.Action
		option int
		want   string
	}{
		{core.Action{Kind: core.ActionAccept, ApprovalID: "abc123"}, 0, "plan:a:abc123"},
		{core.Action{Kind: core.ActionRevise, ApprovalID: "abc123"}, 0, "plan:r:abc123"},
		{core.Action{Kind: core.ActionAuto, ApprovalID: "abc123"}, 0, "plan:u:abc123"},
		{core.Action{Kind: core.ActionUndo, ApprovalID: "abc123"}, 0, "plan:n:abc123"},
		{core.Action{Kind: core.ActionAnswer, ApprovalID: "q1", Value: "Blue"}, 2, "plan:q:q1:2"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			id, ok := customID(tt.action, tt.option)
			if !ok || id != tt.want {
				t.Fatalf("customID = %q, %v; want %q", id, ok, tt.want)
			}
			b, ok := parseCustomID(id)
			if !ok || b.kind != tt.action.Kind || b.approval != tt.action.ApprovalID || b.option != tt.option {
				t.Errorf("parseCustomID(%q) = %+v, %v", id, b, ok)
			}
		})
	}
	if b, ok := parseCustomID(modalID("abc")); !ok || !b.modal || b.kind != core.ActionRevise || b.approval != "abc" {
		t.Errorf("modal id parsed as %+v, %v", b, ok)
	}
}

func TestCustomIDRefusals(t *testing.T) {
	long := strings.Repeat("a", 65)
	for _, a := range []core.Action{
		{Kind: core.ActionAccept},
		{Kind: core.ActionAccept, ApprovalID: "has space"},
		{Kind: core.ActionAccept, ApprovalID: long},
		{Kind: "delete", ApprovalID: "abc"},
	} {
		if id, ok := customID(a, 1); ok {
			t.Errorf("customID(%+v) = %q, want refused", a, id)
		}
	}
	for _, s := range []string{"", "plan:", "plan:a:", "plan:x:abc", "plan:a:a:b", "other:a:abc", "plan:q:abc", "plan:q:abc:0",
		"plan:q:abc:01", "plan:q:abc:26", "plan:q::1", "plan:a:" + long, "plan:a:abc/../x"} {
		if b, ok := parseCustomID(s); ok {
			t.Errorf("parseCustomID(%q) = %+v, want refused", s, b)
		}
	}
}

func TestComponentsLayout(t *testing.T) {
	var bs []core.Button
	for _, k := range []core.ActionKind{core.ActionAccept, core.ActionRevise, core.ActionAuto} {
		bs = append(bs, core.Button{Label: string(k), Action: core.Action{Kind: k, ApprovalID: "ap"}})
	}
	for i := range 7 {
		bs = append(bs, core.Button{Label: strings.Repeat("x", 100) + fmt.Sprint(i), Action: core.Action{Kind: core.ActionAnswer, ApprovalID: "q"}})
	}
	bs = append(bs, core.Button{Label: "bad", Action: core.Action{Kind: core.ActionAccept, ApprovalID: "no good"}})
	rows, dropped := components(bs)
	if dropped != 1 || len(rows) != 3 {
		t.Fatalf("rows %d, dropped %d; want 3 rows (decisions, 5 answers, 2 answers) and 1 dropped", len(rows), dropped)
	}
	second := rows[1].(discordgo.ActionsRow).Components
	b := second[0].(discordgo.Button)
	if len(second) != 5 || b.CustomID != "plan:q:q:1" || len([]rune(b.Label)) != maxLabel {
		t.Errorf("answer row %+v, want 5 buttons with labels cut to %d", second, maxLabel)
	}
	if got := approvals(core.Reply{Buttons: bs}); len(got) != 1 || got[0] != "ap" {
		t.Errorf("approvals = %q, want [ap]", got)
	}
}

func TestCommandText(t *testing.T) {
	opt := func(name string, v any) *discordgo.ApplicationCommandInteractionDataOption {
		return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: v}
	}
	sub := func(name string, opts ...*discordgo.ApplicationCommandInteractionDataOption) discordgo.ApplicationCommandInteractionData {
		return discordgo.ApplicationCommandInteractionData{Name: "plan", Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: opts}}}
	}
	tests := []struct {
		data discordgo.ApplicationCommandInteractionData
		want string
	}{
		{sub("status"), "/plan status"},
		{sub("revise", opt("feedback", "  also fix typos ")), "/plan revise also fix typos"},
		{sub("auto", opt("choice", "off")), "/plan auto off"},
		{sub("accept", opt("text", 2.0)), "/plan accept"},
		{discordgo.ApplicationCommandInteractionData{Name: "plan"}, "/plan"},
	}
	for _, tt := range tests {
		if got := commandText(tt.data); got != tt.want {
			t.Errorf("commandText = %q, want %q", got, tt.want)
		}
	}
}

func TestPlanCommandFitsDiscord(t *testing.T) {
	cmd := planCommand()
	if cmd.Name != "plan" || len(cmd.Description) == 0 || len([]rune(cmd.Description)) > maxDescription {
		t.Fatalf("command %q description %q", cmd.Name, cmd.Description)
	}
	for _, sub := range cmd.Options {
		if len([]rune(sub.Description)) > maxDescription || sub.Description == "" {
			t.Errorf("subcommand %s description %q", sub.Name, sub.Description)
		}
		for _, o := range sub.Options {
			if len(o.Name) > maxOptionName || o.Name != strings.ToLower(o.Name) || strings.ContainsAny(o.Name, " |<>[]") {
				t.Errorf("subcommand %s option name %q is not a valid option name", sub.Name, o.Name)
			}
			if len([]rune(o.Description)) > maxDescription || o.Description == "" {
				t.Errorf("subcommand %s option description %q", sub.Name, o.Description)
			}
		}
	}
	if on := cmd.Options[3]; on.Name != "on" || on.Options[0].Name != "goal" || on.Options[0].Required {
		t.Errorf("on: %+v, want an optional goal", on.Options[0])
	}
}

func TestRewritingTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Host+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	for _, tt := range []struct{ api, want string }{
		{srv.URL, "/api/v9/gateway"},
		{srv.URL + "/proxy/", "/proxy/api/v9/gateway"},
	} {
		hc, err := rewritingClient(&http.Client{Timeout: time.Second}, tt.api)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, discordgo.EndpointGateway, nil)
		req.Header.Set("Authorization", "Bot x")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if last := got[len(got)-1]; last != strings.TrimPrefix(srv.URL, "http://")+" "+tt.want+" Bot x" {
			t.Errorf("api_url %q: request arrived as %q, want path %q", tt.api, last, tt.want)
		}
	}
	if discordgo.EndpointGateway != "https://discord.com/api/v9/gateway" {
		t.Errorf("the library's endpoint changed to %q: package state was touched", discordgo.EndpointGateway)
	}
}

func TestScrub(t *testing.T) {
	c := &Channel{token: "tok.SECRET.value"}
	raw := errors.New(`Patch "http://127.0.0.1:1/api/v9/webhooks/900/itok-1-secret/messages/@original": dial tcp: refused; auth tok.SECRET.value`)
	err := c.scrub(raw)
	if s := err.Error(); strings.Contains(s, "itok") || strings.Contains(s, "SECRET") || !strings.Contains(s, "/webhooks/900/[token]/messages") {
		t.Errorf("scrubbed to %q", s)
	}
	if errors.Unwrap(err) != nil {
		t.Error("a scrubbed error unwraps to the original")
	}
}

func TestWithDecision(t *testing.T) {
	line := channels.DiscordMarkdown(`Plan v1 "Docs" — accepted by alice`)
	short := withDecision("Plan v1 — Docs (1 step)", line)
	if !strings.HasPrefix(short, "Plan v1 — Docs (1 step)\n\n") || !strings.HasSuffix(short, "accepted by alice") {
		t.Errorf("withDecision = %q", short)
	}
	long := withDecision(strings.Repeat("é", 2000), line)
	if n := channels.UTF16Len(long); n > maxContent || !strings.HasSuffix(long, "accepted by alice") {
		t.Errorf("a full message with the decision has %d characters, ends %q", n, long[len(long)-20:])
	}
}

func TestStripMention(t *testing.T) {
	c := &Channel{botID: "900", botName: "plangate"}
	tests := []struct{ in, want string }{
		{"<@900> /plan status", "/plan status"},
		{"<@!900>   hello", "hello"},
		{"hey <@900>, look", "hey @plangate, look"},
		{"<@901> hi", "<@901> hi"},
	}
	for _, tt := range tests {
		if got := c.stripMention(tt.in); got != tt.want {
			t.Errorf("stripMention(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRecentAndSnowflake(t *testing.T) {
	r := newRecent(2)
	if !r.add("a") || r.add("a") || !r.add("b") || !r.add("c") || !r.add("a") {
		t.Error("recent does not remember the last two ids and forget older ones")
	}
	// 175928847299117063 is Discord's documented example: 2016-04-30 11:18:25.796 UTC.
	if got := snowflakeTime("175928847299117063").UTC(); !got.Equal(time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)) {
		t.Errorf("snowflakeTime = %v", got)
	}
}

func TestRoleKeys(t *testing.T) {
	got := roleKeys(&discordgo.Member{Roles: []string{"10", "", "20"}})
	if strings.Join(got, ",") != "discord-role:10,discord-role:20" {
		t.Errorf("roleKeys = %q", got)
	}
	if roleKeys(nil) != nil {
		t.Error("roleKeys(nil) is not empty")
	}
}

// What the gateway path saves of an interaction decodes to the same message, for each
// kind the engine handles: a /plan command, a button, the Revise modal's submit.
func TestSavedInteractionRoundTrip(t *testing.T) {
	c := &Channel{botID: "900", chans: newChannelCache(), seen: newRecent(8), log: slog.New(slog.DiscardHandler)}
	c.chans.put("C1", chanInfo{})
	member := `"guild_id":"G1","member":{"user":{"id":"111","username":"alice"},"roles":["R1"]}`
	for _, raw := range []string{
		`{"id":"5","application_id":"9","type":2,"token":"tk",` + member + `,"channel_id":"C1","data":{"id":"c","name":"plan","type":1,"options":[{"name":"revise","type":1,"options":[{"name":"feedback","type":3,"value":"less"}]}]}}`,
		`{"id":"6","application_id":"9","type":3,"token":"tk",` + member + `,"channel_id":"C1","data":{"custom_id":"plan:a:ap1","component_type":2},"message":{"id":"77","channel_id":"C1","content":"Plan v1","type":0}}`,
		`{"id":"7","application_id":"9","type":5,"token":"tk",` + member + `,"channel_id":"C1","data":{"custom_id":"` + modalID("ap1") + `","components":[{"type":1,"components":[{"type":4,"custom_id":"feedback","value":"shorter, please"}]}]}}`,
	} {
		var i discordgo.Interaction
		if err := json.Unmarshal([]byte(raw), &i); err != nil {
			t.Fatal(err)
		}
		want, _ := c.fromInteraction(t.Context(), &i)
		enc, err := encodeInteraction(&i)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := decodeSaved(channels.InboxEntry{Key: i.ID, Ref: "2026-03-01T10:00:00Z", Data: enc})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.fromInteraction(t.Context(), back)
		if !reflect.DeepEqual(got.msg, want.msg) || want.msg.ID == "" || back.Token != "tk" || back.AppID != "9" {
			t.Errorf("interaction %s saved and read back is %+v (token %q, app %q); want %+v", i.ID, got.msg, back.Token, back.AppID, want.msg)
		}
		if a := want.msg.Action; a != nil && a.Kind == core.ActionRevise && a.Value != "shorter, please" {
			t.Errorf("the modal's feedback is %q", a.Value)
		}
	}
}
