// Package llm holds the model providers that implement core.Model: an OpenAI-compatible
// client and the script provider, which replays a YAML file of model turns so the demo and
// the tests run offline and deterministically.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/plangate/plangate/core"
)

// quoteLimit bounds how much of the user's text an exhaustion error repeats: enough to
// recognise the message in a chat, short enough to stay one line.
const quoteLimit = 60

// Script is the script model provider. It is safe for concurrent use; every session replays
// the whole script independently.
type Script struct {
	name  string
	turns []scriptTurn

	mu       sync.Mutex
	sessions map[string]*scriptSession
}

var _ core.Model = (*Script)(nil)

// scriptTurn is one compiled turn of the file.
type scriptTurn struct {
	line      int
	match     *regexp.Regexp // nil: fits any message
	text      string
	toolCalls []scriptCall
	err       string
}

type scriptCall struct {
	name string
	args json.RawMessage
}

// scriptSession is the replay position of one session.
type scriptSession struct {
	used  []bool
	nUsed int // how many of used are true
	calls int // tool calls handed out so far, for unique call ids
}

// The file format, decoded strictly.
type scriptFile struct {
	Turns []turnYAML `yaml:"turns"`
}

type turnYAML struct {
	Match     string     `yaml:"match"`
	Text      string     `yaml:"text"`
	ToolCalls []callYAML `yaml:"tool_calls"`
	Error     string     `yaml:"error"`
}

type callYAML struct {
	Name string   `yaml:"name"`
	Args argsJSON `yaml:"args"`
}

// argsJSON converts a YAML mapping into the JSON object a tool receives, keeping key order
// so replayed transcripts read like the script.
type argsJSON json.RawMessage

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (a *argsJSON) UnmarshalYAML(n ast.Node) error {
	line := n.GetToken().Position.Line
	if n.Type() != ast.MappingType {
		return fmt.Errorf("line %d: args must be a mapping, not %s", line, n.Type())
	}
	var v any
	if err := yaml.NodeToValue(n, &v, yaml.UseOrderedMap()); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := appendJSON(&b, v); err != nil {
		return fmt.Errorf("line %d: converting args to JSON: %w", line, err)
	}
	*a = b.Bytes()
	return nil
}

// appendJSON writes v, as decoded with yaml.UseOrderedMap, as JSON.
func appendJSON(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case yaml.MapSlice:
		b.WriteByte('{')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			key, ok := item.Key.(string)
			if !ok {
				key = fmt.Sprint(item.Key)
			}
			k, _ := json.Marshal(key) // a string always marshals
			b.Write(k)
			b.WriteByte(':')
			if err := appendJSON(b, item.Value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendJSON(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(out)
	}
	return nil
}

// LoadScript reads and parses a script file; the path names the script in errors.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading script: %w", err)
	}
	return ParseScript(path, data)
}

// ParseScript parses a script. Unknown keys, empty turns and bad regexps are errors naming
// the line, so a typo in a demo script fails at start-up rather than mid-conversation.
func ParseScript(name string, data []byte) (*Script, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, fmt.Errorf("script %s: %s", name, yamlMessage(err))
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		return nil, fmt.Errorf("script %s: expected one YAML document with turns", name)
	}
	body := file.Docs[0].Body
	var raw scriptFile
	if err := yaml.NodeToValue(body, &raw, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("script %s: %s", name, yamlMessage(err))
	}
	if len(raw.Turns) == 0 {
		return nil, fmt.Errorf("script %s: no turns", name)
	}
	lines := turnLines(body)
	s := &Script{name: name, sessions: make(map[string]*scriptSession)}
	for i, rt := range raw.Turns {
		t := scriptTurn{text: rt.Text, err: rt.Error}
		if i < len(lines) {
			t.line = lines[i]
		}
		where := fmt.Sprintf("turn %d (line %d)", i+1, t.line)
		if rt.Text == "" && len(rt.ToolCalls) == 0 && rt.Error == "" {
			return nil, fmt.Errorf("script %s: %s: needs text, tool_calls or error", name, where)
		}
		if rt.Error != "" && (rt.Text != "" || len(rt.ToolCalls) > 0) {
			return nil, fmt.Errorf("script %s: %s: error cannot be combined with text or tool_calls", name, where)
		}
		if rt.Match != "" {
			re, err := regexp.Compile(rt.Match)
			if err != nil {
				return nil, fmt.Errorf("script %s: %s: bad match regexp: %w", name, where, err)
			}
			t.match = re
		}
		for j, rc := range rt.ToolCalls {
			if rc.Name == "" {
				return nil, fmt.Errorf("script %s: %s: tool call %d has no name", name, where, j+1)
			}
			args := json.RawMessage(rc.Args)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			t.toolCalls = append(t.toolCalls, scriptCall{name: rc.Name, args: args})
		}
		s.turns = append(s.turns, t)
	}
	return s, nil
}

// turnLines returns the line each entry of the turns sequence starts on.
func turnLines(body ast.Node) []int {
	p, err := yaml.PathString("$.turns")
	if err != nil {
		return nil
	}
	n, err := p.FilterNode(body)
	if err != nil {
		return nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil
	}
	lines := make([]int, len(seq.Values))
	for i, v := range seq.Values {
		// The hyphen is where a reader looks for the turn, and it exists even for an
		// empty entry whose value token has no useful position.
		if i < len(seq.Entries) && seq.Entries[i].Start != nil {
			lines[i] = seq.Entries[i].Start.Position.Line
		} else if tok := v.GetToken(); tok != nil {
			lines[i] = tok.Position.Line
		}
	}
	return lines
}

// yamlMessage renders a go-yaml error as "line N: message" without the source excerpt,
// which would not fit in a one-line log or chat reply.
func yamlMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil {
			return fmt.Sprintf("line %d: %s", tok.Position.Line, ye.GetMessage())
		}
		return ye.GetMessage()
	}
	return err.Error()
}

// Name is the name the script was loaded under (its path for LoadScript).
func (s *Script) Name() string { return s.name }

// Complete consumes the first unused turn of the session whose match fits the newest user
// message and answers with it.
func (s *Script) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return core.ModelResponse{}, fmt.Errorf("script %s: %w", s.name, err)
	}
	target := newestUserText(req.Messages)

	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[req.SessionID]
	if sess == nil {
		sess = &scriptSession{used: make([]bool, len(s.turns))}
		s.sessions[req.SessionID] = sess
	}
	idx := -1
	for i, t := range s.turns {
		if !sess.used[i] && (t.match == nil || t.match.MatchString(target)) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return core.ModelResponse{}, fmt.Errorf("script %s: no unused turn matches %s (%d of %d turns used)",
			s.name, quoteShort(target), sess.nUsed, len(s.turns))
	}
	sess.used[idx] = true
	sess.nUsed++
	t := s.turns[idx]
	if t.err != "" {
		return core.ModelResponse{}, fmt.Errorf("script %s: turn %d: %s", s.name, idx+1, t.err)
	}
	resp := core.ModelResponse{Text: t.text}
	for _, c := range t.toolCalls {
		sess.calls++
		resp.ToolCalls = append(resp.ToolCalls, core.ToolCall{
			ID:   "call_" + strconv.Itoa(sess.calls),
			Name: c.name,
			Args: bytes.Clone(c.args), // callers may keep or modify it
		})
	}
	return resp, nil
}

// newestUserText is what a turn's match is tested against: a person's text or an injected
// decision, whichever reached the model last (the executing plan's progress is neither).
func newestUserText(msgs []core.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == core.RoleUser && msgs[i].Name != core.ProgressName {
			return msgs[i].Content
		}
	}
	return ""
}

// quoteShort quotes text, cut to quoteLimit runes.
func quoteShort(text string) string {
	if utf8.RuneCountInString(text) <= quoteLimit {
		return strconv.Quote(text)
	}
	r := []rune(text)
	return strconv.Quote(string(r[:quoteLimit]) + "…")
}

var _ core.Streamer = (*Script)(nil)

// CompleteStream implements core.Streamer: the scripted answer, its text handed to onText
// in streamChunks growing pieces cut at spaces first, so the demo shows a draft.
func (s *Script) CompleteStream(ctx context.Context, req core.ModelRequest, onText func(string)) (core.ModelResponse, error) {
	resp, err := s.Complete(ctx, req)
	if err != nil || onText == nil {
		return resp, err
	}
	for _, p := range textPrefixes(resp.Text, streamChunks) {
		onText(p)
	}
	return resp, nil
}

// streamChunks is how many pieces the script's text streams in.
const streamChunks = 3

// textPrefixes cuts text into at most n growing prefixes ending at a space (or at its
// end), the last being text itself; "" has none.
func textPrefixes(text string, n int) []string {
	var out []string
	for i := 1; i < n; i++ {
		cut := len(text) * i / n
		if sp := strings.LastIndexByte(text[:cut], ' '); sp > 0 {
			cut = sp
		}
		if cut > 0 && (len(out) == 0 || len(out[len(out)-1]) < cut) {
			out = append(out, text[:cut])
		}
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
