package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
)

// legacyNames is the pattern legacyBody checks names with.
var legacyNames = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// legacyBody is the body as it was encoded before openai_encode.go: encoding/json on a
// struct. The tests hold the hand-made bytes to it.
func legacyBody(cfg OpenAIConfig, req core.ModelRequest) ([]byte, error) {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role       string  `json:"role"`
		Content    *string `json:"content,omitempty"`
		Name       string  `json:"name,omitempty"`
		ToolCallID string  `json:"tool_call_id,omitempty"`
		ToolCalls  []call  `json:"tool_calls,omitempty"`
	}
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var r struct {
		Model       string    `json:"model"`
		Messages    []message `json:"messages"`
		Tools       []tool    `json:"tools,omitempty"`
		Temperature *float64  `json:"temperature,omitempty"`
	}
	r.Model, r.Temperature, r.Messages = cfg.Model, cfg.Temperature, []message{}
	if req.Planning && cfg.PlanModel != "" {
		r.Model = cfg.PlanModel
	}
	if req.System != "" {
		r.Messages = append(r.Messages, message{Role: "system", Content: &req.System})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case core.RoleUser:
			u := message{Role: "user", Content: &m.Content}
			if legacyNames.MatchString(m.Name) {
				u.Name = m.Name
			}
			r.Messages = append(r.Messages, u)
		case core.RoleAssistant:
			a := message{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = &m.Content
			}
			for _, c := range m.ToolCalls {
				tc := call{ID: c.ID, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = c.Name, argumentsText(c.Args)
				a.ToolCalls = append(a.ToolCalls, tc)
			}
			r.Messages = append(r.Messages, a)
		case core.RoleTool:
			r.Messages = append(r.Messages, message{Role: "tool", Content: &m.Content, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("building the model request: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("building the model request: tool %q has a parameter schema that is not valid JSON", t.Name)
		}
		r.Tools = append(r.Tools, tool{Type: "function", Function: fn{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("building the model request: %w", err)
	}
	return buf.Bytes(), nil
}

// awkward holds what a JSON encoder must escape, or must not.
const awkward = "quote \" backslash \\ <html> & tags\n\r\t\b\f \x00\x01\x1f\x7f line\u2028para\u2029 bad\xff\xc3( é 日本 🙂"

func encodeRequests() map[string]core.ModelRequest {
	withAwkward := benchRequest()
	withAwkward.System = awkward
	withAwkward.Messages = append(withAwkward.Messages,
		core.ChatMessage{Role: core.RoleUser, Name: "Zoë", Content: awkward},
		core.ChatMessage{Role: core.RoleUser, Name: strings.Repeat("a", 64), Content: ""},
		core.ChatMessage{Role: core.RoleUser, Name: strings.Repeat("a", 65), Content: "x"},
		core.ChatMessage{Role: core.RoleAssistant, Content: awkward, ToolCalls: []core.ToolCall{
			{ID: "c<1>", Name: "run_command", Args: json.RawMessage(`{"argv":["echo","<&>"]}`)},
			{ID: "c2", Name: "edit_file", Args: json.RawMessage(`"cut {\"path\":"`)},
			{ID: "c3", Name: "list_files"},
		}},
		core.ChatMessage{Role: core.RoleTool, ToolCallID: "c<1>", Content: awkward},
		core.ChatMessage{Role: core.RoleTool, Content: "no id"},
		core.ChatMessage{Role: core.RoleAssistant},
	)
	withAwkward.Tools = append(withAwkward.Tools,
		core.ToolSpec{Name: "no_schema"},
		core.ToolSpec{Name: "spaced <schema>", Description: awkward, Parameters: json.RawMessage(" {\n \"type\" : \"object\",\t\"description\": \"<a & b>\" }\n")},
	)
	return map[string]core.ModelRequest{
		"empty":         {},
		"system only":   {System: "be brief"},
		"bench":         benchRequest(),
		"awkward":       withAwkward,
		"no system":     {Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}}},
		"planning":      {Planning: true, Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "plan"}}},
		"empty tools":   {System: "s", Tools: []core.ToolSpec{}},
		"no-name tools": {Tools: []core.ToolSpec{{Parameters: json.RawMessage(`{}`)}}},
	}
}

func TestBodyMatchesEncodingJSON(t *testing.T) {
	zero, warm, tiny, huge := 0.0, 0.7, 1e-7, 1e21
	configs := []OpenAIConfig{
		{Model: "m"},
		{Model: "m<&>\u2028", PlanModel: "planner", Temperature: &warm},
		{Model: "m", Temperature: &zero},
		{Model: "m", Temperature: &tiny},
		{Model: "m", Temperature: &huge},
	}
	for ci, cfg := range configs {
		o, err := NewOpenAI(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, req := range encodeRequests() {
			want, err := legacyBody(cfg, req)
			if err != nil {
				t.Fatalf("%s: legacy: %v", name, err)
			}
			for try := range 2 { // the second from the caches
				got, _, err := o.body(req, req.Planning && o.cfg.PlanModel != "")
				if err != nil {
					t.Fatalf("config %d, %s, try %d: %v", ci, name, try, err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("config %d, %s, try %d:\n got %s\nwant %s", ci, name, try, got, want)
				}
			}
		}
	}
}

func TestBodyErrorsMatchEncodingJSON(t *testing.T) {
	nan := math.NaN()
	bad := core.ModelRequest{
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "a"}, {Role: "robot", Content: "b"}},
		Tools:    []core.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}},
	}
	badTool := core.ModelRequest{Tools: bad.Tools}
	tests := []struct {
		name string
		cfg  OpenAIConfig
		req  core.ModelRequest
	}{
		{"unknown role before a broken schema", OpenAIConfig{Model: "m"}, bad},
		{"broken schema", OpenAIConfig{Model: "m"}, badTool},
		{"NaN temperature", OpenAIConfig{Model: "m", Temperature: &nan}, userRequest("hi")},
		{"broken schema before NaN", OpenAIConfig{Model: "m", Temperature: &nan}, badTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewOpenAI(tt.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, wantErr := legacyBody(tt.cfg, tt.req)
			_, _, err = o.body(tt.req, tt.req.Planning && o.cfg.PlanModel != "")
			if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
				t.Errorf("error %v, want %v", err, wantErr)
			}
		})
	}
}

// TestBodyToolsChange: the tools cache is keyed by what the tools say, so a changed set,
// a changed description or a schema changed in place is encoded anew.
func TestBodyToolsChange(t *testing.T) {
	cfg := OpenAIConfig{Model: "m"}
	o, err := NewOpenAI(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := benchRequest()
	check := func(step string) {
		t.Helper()
		want, err := legacyBody(cfg, req)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := o.body(req, req.Planning && o.cfg.PlanModel != "")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: body differs (err %v):\n got %s\nwant %s", step, err, got, want)
		}
	}
	check("first")
	req.Tools = req.Tools[:3]
	check("fewer tools")
	req.Tools = append([]core.ToolSpec(nil), req.Tools...)
	req.Tools[1].Description = "changed"
	check("description changed")
	schema := bytes.Clone(req.Tools[2].Parameters)
	req.Tools[2].Parameters = schema
	check("same schema, new bytes")
	copy(schema[bytes.Index(schema, []byte("string")):], "number")
	check("schema changed in place")
	req.Tools[0].Name = "renamed"
	check("renamed")
	req.System = "another prompt"
	check("system changed")
	req.Tools = nil
	check("no tools")
	req.Tools = benchRequest().Tools
	check("tools back")
}

// TestBodyConcurrentToolSets: sessions offering different tools at once each get their
// own tools, whichever the cache holds.
func TestBodyConcurrentToolSets(t *testing.T) {
	cfg := OpenAIConfig{Model: "m"}
	o, err := NewOpenAI(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := benchRequest(), benchRequest()
	b.Tools, b.System = b.Tools[:4], "other"
	wantA, _ := legacyBody(cfg, a)
	wantB, _ := legacyBody(cfg, b)
	var wg sync.WaitGroup
	for i := range 4 {
		req, want := a, wantA
		if i%2 == 1 {
			req, want = b, wantB
		}
		wg.Go(func() {
			for range 200 {
				got, _, err := o.body(req, req.Planning && o.cfg.PlanModel != "")
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("body differs under concurrency (err %v)", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParticipantNameMatchesPattern(t *testing.T) {
	for _, s := range []string{"", "a", "A-z_09", "Zoë", "a b", strings.Repeat("x", 64), strings.Repeat("x", 65), "a.b", "a\n", "\xff", "-", "_"} {
		if got, want := participantName(s), legacyNames.MatchString(s); got != want {
			t.Errorf("participantName(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", awkward, "\u2028\u2029", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if got := appendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("appendString([]byte(%q)) = %s, encoding/json %s", s, got, want)
		}
	})
}
