package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/plangate/plangate/core"
)

// The request body is appended by hand, byte for byte what encoding/json writes for it
// (SetEscapeHTML(false), the Encoder's trailing newline), without reflection or compacting
// and validating every tool schema on every call. TestBodyMatchesEncodingJSON and
// FuzzAppendString hold the bytes to encoding/json's.

// emptySchema is offered for a tool that declares no parameters: some servers reject a
// function without a parameters object.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolsEntry is the encoded tools of the last call and a copy of what they were encoded
// from: the engine offers the same tools call after call, so comparing them is all most
// calls do.
type toolsEntry struct {
	specs []core.ToolSpec // deep copies of the names, descriptions and schemas encoded
	json  []byte          // `,"tools":[...]`, or empty when there are no tools
}

// systemEntry is the encoded system message of the last call.
type systemEntry struct {
	text string
	json []byte // `{"role":"system","content":"..."}`
}

// toolsJSON returns the encoded tools member for specs, from the cache when they are the
// ones encoded last.
func (o *OpenAI) toolsJSON(specs []core.ToolSpec) ([]byte, error) {
	if e := o.tools.Load(); e != nil && sameTools(e.specs, specs) {
		return e.json, nil
	}
	b, err := encodeTools(specs)
	if err != nil {
		return nil, err
	}
	o.tools.Store(&toolsEntry{specs: copyTools(specs), json: b})
	return b, nil
}

// systemJSON returns the encoded system message, from the cache when the prompt is the
// one encoded last.
func (o *OpenAI) systemJSON(text string) []byte {
	if e := o.system.Load(); e != nil && e.text == text {
		return e.json
	}
	b := appendString([]byte(`{"role":"system","content":`), text)
	b = append(b, '}')
	o.system.Store(&systemEntry{text: text, json: b})
	return b
}

// encodeTools encodes the tools member, checking that every schema is JSON.
func encodeTools(specs []core.ToolSpec) ([]byte, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	b := []byte(`,"tools":[`)
	for i, t := range specs {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("building the model request: tool %q has a parameter schema that is not valid JSON", t.Name)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","function":{"name":`...)
		b = appendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = appendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		var buf bytes.Buffer
		if err := json.Compact(&buf, schema); err != nil { // as encoding/json does a RawMessage
			return nil, fmt.Errorf("building the model request: %w", err)
		}
		b = append(b, buf.Bytes()...)
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

// sameTools reports whether a and b encode alike: kinds and flags are not sent.
func sameTools(a, b []core.ToolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

// copyTools copies specs with their schemas, so a caller changing a schema in place is
// seen as a change.
func copyTools(specs []core.ToolSpec) []core.ToolSpec {
	out := make([]core.ToolSpec, len(specs))
	for i, t := range specs {
		out[i] = core.ToolSpec{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	return out
}

// appendMessage appends one history entry; i is its index, for the error.
func appendMessage(b []byte, m *core.ChatMessage, i int) ([]byte, error) {
	switch m.Role {
	case core.RoleUser:
		b = append(b, `{"role":"user","content":`...)
		b = appendString(b, m.Content)
		// Sender names with spaces or non-ASCII letters are not accepted as a name; the
		// message still goes, just unattributed.
		if participantName(m.Name) {
			b = append(b, `,"name":`...)
			b = appendString(b, m.Name)
		}
	case core.RoleAssistant:
		b = append(b, `{"role":"assistant"`...)
		if m.Content != "" || len(m.ToolCalls) == 0 {
			b = append(b, `,"content":`...)
			b = appendString(b, m.Content)
		}
		for j, c := range m.ToolCalls {
			if j == 0 {
				b = append(b, `,"tool_calls":[`...)
			} else {
				b = append(b, ',')
			}
			// Built from the transcript, never with ChatCompletionMessage.ToParam(): that
			// re-sends the raw JSON the call was decoded from, so a call whose server left
			// out "type" would go back without it. Type is always "function".
			b = append(b, `{"id":`...)
			b = appendString(b, c.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, c.Name)
			b = append(b, `,"arguments":`...)
			b = appendArguments(b, c.Args)
			b = append(b, "}}"...)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, ']')
		}
	case core.RoleTool:
		b = append(b, `{"role":"tool","content":`...)
		b = appendString(b, m.Content)
		if m.ToolCallID != "" {
			b = append(b, `,"tool_call_id":`...)
			b = appendString(b, m.ToolCallID)
		}
	default:
		return b, fmt.Errorf("building the model request: message %d has unknown role %q", i, m.Role)
	}
	return append(b, '}'), nil
}

// appendArguments appends argumentsText(args) as a JSON string without making a string
// of arguments that are JSON already.
func appendArguments(b []byte, args json.RawMessage) []byte {
	if len(args) == 0 || args[0] == '"' {
		return appendString(b, argumentsText(args))
	}
	return appendString(b, args)
}

// participantName reports whether s is a name the Chat Completions API accepts for a
// message: ^[a-zA-Z0-9_-]{1,64}$.
func participantName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// plainByte holds the bytes a JSON string carries as they are: printable ASCII but the
// quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string the way encoding/json does with HTML escaping
// off: quote, backslash and control characters escaped (\b \f \n \r \t short), invalid
// UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029, everything else as it is.
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// A short string conversion, kept on the stack, for the generic S.
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encodeTemperature is the temperature member, encoded once: "" when none is set, and an
// error (as encoding/json gives for NaN or infinities) returned by every call.
func encodeTemperature(t *float64) (string, error) {
	if t == nil {
		return "", nil
	}
	v, err := json.Marshal(*t)
	if err != nil {
		return "", fmt.Errorf("building the model request: %w", err)
	}
	return `,"temperature":` + string(v), nil
}

// modelPrefix is the body up to the first message for model.
func modelPrefix(model string) []byte {
	return append(appendString([]byte(`{"model":`), model), `,"messages":[`...)
}
