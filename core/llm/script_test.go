package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
)

// ask builds a request whose newest user message is text, with older entries around it so
// the test also checks that the newest user-role message is the one matched.
func ask(session, text string) core.ModelRequest {
	return core.ModelRequest{
		SessionID: session,
		Messages: []core.ChatMessage{
			{Role: core.RoleUser, Content: "an older message about changelog and boom"},
			{Role: core.RoleAssistant, Content: "ok"},
			{Role: core.RoleUser, Content: text},
			{Role: core.RoleTool, Content: "tool output mentioning changelog", ToolCallID: "call_1"},
		},
	}
}

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := ParseScript("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	return s
}

// reply returns a compact description of a response: its text, or its tool calls.
func reply(r core.ModelResponse) string {
	var parts []string
	if r.Text != "" {
		parts = append(parts, r.Text)
	}
	for _, c := range r.ToolCalls {
		parts = append(parts, fmt.Sprintf("%s %s %s", c.ID, c.Name, c.Args))
	}
	return strings.Join(parts, " | ")
}

func TestScriptMatchingOrder(t *testing.T) {
	s := mustParse(t, `
turns:
  - match: "(?i)changelog"
    text: "changelog turn"
  - text: "any 1"
  - match: "^/plan accept"
    text: "accept turn"
  - text: "any 2"
`)
	steps := []struct {
		user string
		want string
	}{
		// No match on the first turn: the first unmatched turn fits anything.
		{"hello", "any 1"},
		// The changelog turn is still unused and is first.
		{"Add a CHANGELOG please", "changelog turn"},
		// "any 2" is the first fitting turn; the accept turn is skipped.
		{"something else", "any 2"},
		{"/plan accept", "accept turn"},
	}
	ctx := context.Background()
	for i, st := range steps {
		resp, err := s.Complete(ctx, ask("s1", st.user))
		if err != nil {
			t.Fatalf("step %d (%q): %v", i+1, st.user, err)
		}
		if got := reply(resp); got != st.want {
			t.Fatalf("step %d (%q): got %q, want %q", i+1, st.user, got, st.want)
		}
	}
	if _, err := s.Complete(ctx, ask("s1", "more")); err == nil {
		t.Fatal("a fifth call succeeded on a four-turn script")
	}
}

func TestScriptSessionsAreIndependent(t *testing.T) {
	s := mustParse(t, "turns:\n  - text: one\n  - text: two\n")
	ctx := context.Background()
	for _, session := range []string{"a", "b", "a", "b"} {
		if _, err := s.Complete(ctx, ask(session, "x")); err != nil {
			t.Fatalf("session %s: %v", session, err)
		}
	}
	for _, session := range []string{"a", "b"} {
		if _, err := s.Complete(ctx, ask(session, "x")); err == nil {
			t.Fatalf("session %s got a third turn", session)
		}
	}
	resp, err := s.Complete(ctx, ask("c", "x"))
	if err != nil || resp.Text != "one" {
		t.Fatalf("new session: got %q, %v; want the first turn", resp.Text, err)
	}
}

func TestScriptConcurrentSessions(t *testing.T) {
	const sessions, turns = 8, 20
	var src strings.Builder
	src.WriteString("turns:\n")
	for i := range turns {
		fmt.Fprintf(&src, "  - tool_calls: [{name: t%d}]\n", i)
	}
	s := mustParse(t, src.String())
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Go(func() {
			seen := map[string]bool{}
			for j := range turns {
				resp, err := s.Complete(context.Background(), ask(fmt.Sprint("s", i), "go"))
				if err != nil {
					errs <- err
					return
				}
				c := resp.ToolCalls[0]
				if c.Name != fmt.Sprint("t", j) || seen[c.ID] {
					errs <- fmt.Errorf("session %d call %d: got %s %s (seen before: %v)", i, j, c.ID, c.Name, seen[c.ID])
					return
				}
				seen[c.ID] = true
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestScriptExhaustion(t *testing.T) {
	s := mustParse(t, "turns:\n  - match: \"^yes$\"\n    text: ok\n")
	long := strings.Repeat("é", 100)
	_, err := s.Complete(context.Background(), ask("s", long))
	if err == nil {
		t.Fatal("no error for a message no turn matches")
	}
	msg := err.Error()
	want := `script test.yaml: no unused turn matches "` + strings.Repeat("é", quoteLimit) + `…" (0 of 1 turns used)`
	if msg != want {
		t.Fatalf("error\n got %s\nwant %s", msg, want)
	}
	// The failed call consumed nothing: the turn still answers a matching message.
	if resp, err := s.Complete(context.Background(), ask("s", "yes")); err != nil || resp.Text != "ok" {
		t.Fatalf("after a miss: %q, %v", resp.Text, err)
	}
	_, err = s.Complete(context.Background(), ask("s", "yes"))
	if err == nil || !strings.Contains(err.Error(), `matches "yes" (1 of 1 turns used)`) {
		t.Fatalf("exhausted: got %v", err)
	}
}

func TestScriptNoUserMessage(t *testing.T) {
	s := mustParse(t, "turns:\n  - match: x\n    text: x\n  - text: free\n")
	resp, err := s.Complete(context.Background(), core.ModelRequest{SessionID: "s"})
	if err != nil || resp.Text != "free" {
		t.Fatalf("got %q, %v; want the unmatched turn", resp.Text, err)
	}
}

func TestScriptErrorTurn(t *testing.T) {
	s := mustParse(t, `
turns:
  - match: boom
    error: "simulated outage"
  - text: recovered
`)
	ctx := context.Background()
	_, err := s.Complete(ctx, ask("s", "boom now"))
	if err == nil || err.Error() != "script test.yaml: turn 1: simulated outage" {
		t.Fatalf("got %v, want the scripted error", err)
	}
	// The error turn was consumed, so the same text now reaches the next turn.
	resp, err := s.Complete(ctx, ask("s", "boom now"))
	if err != nil || resp.Text != "recovered" {
		t.Fatalf("after the error turn: %q, %v", resp.Text, err)
	}
}

func TestScriptCancelledContext(t *testing.T) {
	s := mustParse(t, "turns:\n  - text: one\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Complete(ctx, ask("s", "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// A cancelled call consumes nothing.
	if resp, err := s.Complete(context.Background(), ask("s", "x")); err != nil || resp.Text != "one" {
		t.Fatalf("after cancel: %q, %v", resp.Text, err)
	}
}

func TestScriptArgsAndIDs(t *testing.T) {
	s, err := LoadScript(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != filepath.Join("testdata", "demo.yaml") {
		t.Errorf("Name() = %q", s.Name())
	}
	ctx := context.Background()
	want := []string{
		`call_1 list_files {"path":"."}`,
		`call_2 exit_plan_mode {"title":"Add a changelog","plan":[{"step":"Create CHANGELOG.md"}]}`,
		`call_3 write_file {"path":"CHANGELOG.md","content":"# Changelog\n"}`,
		`Done: CHANGELOG.md created.`,
	}
	users := []string{"add a changelog", "go on", "[PLAN_DECISION]: approved", "finish"}
	for i, u := range users {
		resp, err := s.Complete(ctx, ask("s", u))
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if got := reply(resp); got != want[i] {
			t.Errorf("turn %d\n got %s\nwant %s", i+1, got, want[i])
		}
	}

	t.Run("types and order", func(t *testing.T) {
		s := mustParse(t, `
turns:
  - tool_calls:
      - {name: a, args: {z: 1, b: [true, null, 2.5], "q\"<": {n: "x\ty"}, 3: yes}}
      - {name: b}
      - {name: c, args: {}}
`)
		resp, err := s.Complete(ctx, ask("s", "x"))
		if err != nil {
			t.Fatal(err)
		}
		got := reply(resp)
		want := `call_1 a {"z":1,"b":[true,null,2.5],"q\"\u003c":{"n":"x\ty"},"3":"yes"} | call_2 b {} | call_3 c {}`
		if got != want {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		// Modifying a response must not change later replays.
		resp.ToolCalls[0].Args[0] = 'X'
		resp2, err := s.Complete(ctx, ask("other", "x"))
		if err != nil || resp2.ToolCalls[0].Args[0] != '{' {
			t.Fatalf("replay changed by caller: %s, %v", resp2.ToolCalls[0].Args, err)
		}
	})
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"unknown turn key", "turns:\n  - text: hi\n  - texx: ho\n", `script bad.yaml: line 3: unknown field "texx"`},
		{"unknown top key", "turns:\n  - text: hi\nturn: []\n", `line 3: unknown field "turn"`},
		{"unknown tool call key", "turns:\n  - tool_calls:\n      - {name: a, arg: {}}\n", `line 3: unknown field "arg"`},
		{"bad regexp", "turns:\n  - text: a\n\n  - match: \"(unclosed\"\n    text: b\n", "script bad.yaml: turn 2 (line 4): bad match regexp: error parsing regexp"},
		{"empty turn", "turns:\n  - text: a\n  - match: x\n", "script bad.yaml: turn 2 (line 3): needs text, tool_calls or error"},
		{"null turn", "turns:\n  - text: a\n  -\n  - text: b\n", "turn 2 (line 3): needs text, tool_calls or error"},
		{"error with text", "turns:\n  - error: e\n    text: t\n", "turn 1 (line 2): error cannot be combined"},
		{"tool call without name", "turns:\n  - tool_calls: [{args: {a: 1}}]\n", "turn 1 (line 2): tool call 1 has no name"},
		{"args not a mapping", "turns:\n  - tool_calls:\n      - name: a\n        args: [1, 2]\n", "line 4: args must be a mapping"},
		{"wrong type", "turns:\n  - text: [1, 2]\n", "script bad.yaml: line 2: cannot unmarshal"},
		{"syntax error", "turns:\n  - text: [1\n", "script bad.yaml: line 2:"},
		{"no turns", "turns: []\n", "script bad.yaml: no turns"},
		{"empty file", "", "script bad.yaml: expected one YAML document"},
		{"two documents", "turns:\n  - text: a\n---\nturns:\n  - text: b\n", "expected one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseScript("bad.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("parsed without error: %+v", s.turns)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestLoadScriptMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := LoadScript(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want a not-exist error naming the path", err)
	}
}

func TestScriptStreams(t *testing.T) {
	s, err := ParseScript("s.yaml", []byte("turns:\n  - text: \"one two three four five six\"\n  - tool_calls:\n      - name: list_files\n        args: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	resp, err := s.CompleteStream(context.Background(), core.ModelRequest{SessionID: "a"}, func(p string) { shown = append(shown, p) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"one two", "one two three", "one two three four five six"}
	if resp.Text != want[2] || strings.Join(shown, "|") != strings.Join(want, "|") {
		t.Fatalf("shown %q, answer %q; want %q", shown, resp.Text, want)
	}
	shown = nil
	resp, err = s.CompleteStream(context.Background(), core.ModelRequest{SessionID: "a"}, func(p string) { shown = append(shown, p) })
	if err != nil || len(resp.ToolCalls) != 1 || len(shown) != 0 {
		t.Fatalf("a tool call turn: %+v, %v, shown %q (want nothing shown)", resp, err, shown)
	}
}
