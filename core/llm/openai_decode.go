package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// answer is what the provider reads of a chat completion: the first choice, the number
// of choices, the usage for the log, and the body for an error a proxy put in a 200.
type answer struct {
	raw     []byte
	choices int
	first   answerChoice
	usage   answerUsage
}

type answerChoice struct {
	content, refusal, finishReason string
	calls                          []answerCall
}

// answerCall is a tool call with the fields of both variants of openai-go's union, filled
// whether or not the server sent "type".
type answerCall struct {
	id, typ, name, args, customName, customInput string
}

type answerUsage struct {
	valid                     bool // total_tokens was there
	prompt, completion, total int64
	cached                    int64 // prompt_tokens_details.cached_tokens
}

// isJSON reports whether a Content-Type is JSON (rather than an event stream, say).
func isJSON(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return strings.Contains(mediaType, "application/json") || strings.HasSuffix(mediaType, "+json")
}

// decodeAnswer reads the body openai-go handed over (option.WithResponseBodyInto) as it
// would have read it into an *openai.ChatCompletion, with the same errors. A completion
// of the plain shape every server sends is read by fastAnswer, with gjson as openai-go's
// decoder reads it but without its reflection over the whole ChatCompletion type, the
// provider's largest CPU cost after the body; anything else goes through openai-go's.
func decodeAnswer(res *http.Response, raw []byte) (*answer, error) {
	contentType := res.Header.Get("content-type")
	if !isJSON(contentType) {
		// openai-go's words for a body it cannot decode into a completion.
		return nil, fmt.Errorf("expected destination type of 'string' or '[]byte' for responses with content-type '%s' that is not 'application/json'", contentType)
	}
	if a, ok := fastAnswer(raw); ok {
		return a, nil
	}
	var comp *openai.ChatCompletion
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&comp); err != nil {
		return nil, fmt.Errorf("error parsing response json: %w", err)
	}
	return answerOf(comp), nil
}

// usageOf is a completion's usage as an answer keeps it.
func usageOf(u openai.CompletionUsage) answerUsage {
	return answerUsage{valid: true, prompt: u.PromptTokens, completion: u.CompletionTokens, total: u.TotalTokens,
		cached: u.PromptTokensDetails.CachedTokens}
}

// answerOf is the answer in a completion openai-go decoded.
func answerOf(comp *openai.ChatCompletion) *answer {
	if comp == nil { // the body was null
		return &answer{}
	}
	a := &answer{raw: []byte(comp.RawJSON()), choices: len(comp.Choices)}
	if u := comp.Usage; u.JSON.TotalTokens.Valid() {
		a.usage = usageOf(u)
	}
	if len(comp.Choices) == 0 {
		return a
	}
	ch := comp.Choices[0]
	a.first = answerChoice{content: ch.Message.Content, refusal: ch.Message.Refusal, finishReason: ch.FinishReason}
	for _, tc := range ch.Message.ToolCalls {
		a.first.calls = append(a.first.calls, answerCall{
			id: tc.ID, typ: tc.Type, name: tc.Function.Name, args: tc.Function.Arguments,
			customName: tc.Custom.Name, customInput: tc.Custom.Input,
		})
	}
	return a
}

// fastAnswer reads a completion whose members the provider reads all have the types the
// API gives them, as openai-go's decoder would: members by their unescaped names, the
// first of duplicates winning (as in gjson's Map, which it decodes from), strings as gjson
// unescapes them, null as absent. Whatever else it meets (a string where an object
// belongs, a number for a string, invalid JSON, anything after the value) it leaves to
// openai-go, reporting false: what openai-go makes of those is its own, and stays so.
func fastAnswer(raw []byte) (*answer, bool) {
	if !json.Valid(raw) { // the check json.Decoder made before handing openai-go the value
		return nil, false
	}
	root := gjson.ParseBytes(raw)
	if !root.IsObject() {
		return nil, false
	}
	var m [2]gjson.Result
	members(root, m[:], "choices", "usage")
	choices, usage := m[0], m[1]
	a := &answer{raw: raw}
	if !readUsage(usage, &a.usage) {
		return nil, false
	}
	if choices.Type == gjson.Null {
		return a, true
	}
	if !choices.IsArray() {
		return nil, false
	}
	ok := true
	choices.ForEach(func(_, ch gjson.Result) bool {
		if a.choices == 0 {
			ok = readChoice(ch, &a.first)
		} else {
			ok = ch.IsObject()
		}
		a.choices++
		return ok
	})
	return a, ok
}

// members finds the first member of obj under each name (Null when there is none).
func members(obj gjson.Result, out []gjson.Result, names ...string) {
	clear(out)
	var found [4]bool
	obj.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		for i, name := range names {
			if key == name && !found[i] {
				out[i], found[i] = v, true
			}
		}
		return true
	})
}

// readChoice reads the first choice into c.
func readChoice(ch gjson.Result, c *answerChoice) bool {
	if !ch.IsObject() {
		return false
	}
	var m [3]gjson.Result
	members(ch, m[:2], "message", "finish_reason")
	msg := m[0]
	var ok bool
	if c.finishReason, ok = text(m[1]); !ok {
		return false
	}
	if msg.Type == gjson.Null {
		return true
	}
	if !msg.IsObject() {
		return false
	}
	members(msg, m[:], "content", "refusal", "tool_calls")
	calls := m[2]
	if c.content, ok = text(m[0]); !ok {
		return false
	}
	if c.refusal, ok = text(m[1]); !ok {
		return false
	}
	if calls.Type == gjson.Null {
		return true
	}
	if !calls.IsArray() {
		return false
	}
	calls.ForEach(func(_, tc gjson.Result) bool {
		var call answerCall
		ok = readCall(tc, &call)
		c.calls = append(c.calls, call)
		return ok
	})
	return ok
}

// readCall reads one tool call.
func readCall(tc gjson.Result, call *answerCall) bool {
	if !tc.IsObject() {
		return false
	}
	var m [4]gjson.Result
	members(tc, m[:], "id", "type", "function", "custom")
	ok1, ok2 := true, true
	call.id, ok1 = text(m[0])
	call.typ, ok2 = text(m[1])
	if !ok1 || !ok2 {
		return false
	}
	if call.name, call.args, ok1 = pair(m[2], "name", "arguments"); !ok1 {
		return false
	}
	call.customName, call.customInput, ok2 = pair(m[3], "name", "input")
	return ok2
}

// pair reads two string members of an object (null: both empty).
func pair(v gjson.Result, k1, k2 string) (s1, s2 string, ok bool) {
	if v.Type == gjson.Null {
		return "", "", true
	}
	if !v.IsObject() {
		return "", "", false
	}
	var m [2]gjson.Result
	members(v, m[:], k1, k2)
	ok1, ok2 := true, true
	s1, ok1 = text(m[0])
	s2, ok2 = text(m[1])
	return s1, s2, ok1 && ok2
}

// text reads a string member; null reads as empty, any other type is not ours to read.
func text(v gjson.Result) (string, bool) {
	switch v.Type {
	case gjson.String:
		return v.Str, true
	case gjson.Null:
		return "", true
	}
	return "", false
}

// readUsage reads the token counts; only plain integers are ours to read.
func readUsage(v gjson.Result, u *answerUsage) bool {
	if v.Type == gjson.Null {
		return true
	}
	if !v.IsObject() {
		return false
	}
	var m [4]gjson.Result
	members(v, m[:], "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details")
	cached, ok := cachedTokens(m[3])
	if !ok {
		return false
	}
	for i, dst := range []*int64{&u.prompt, &u.completion, &u.total} {
		if !count(m[i], dst) {
			return false
		}
	}
	if m[2].Type == gjson.Null { // the counts are read only with a total, as answerOf reads them
		*u = answerUsage{}
		return true
	}
	u.valid, u.cached = true, cached
	return true
}

// cachedTokens reads prompt_tokens_details.cached_tokens (absent or null: 0).
func cachedTokens(details gjson.Result) (int64, bool) {
	if details.Type == gjson.Null {
		return 0, true
	}
	if !details.IsObject() {
		return 0, false
	}
	var m [1]gjson.Result
	members(details, m[:], "cached_tokens")
	var n int64
	return n, count(m[0], &n)
}

// count reads a token count into dst: digits only (no sign, fraction or exponent); null
// leaves dst alone.
func count(v gjson.Result, dst *int64) bool {
	if v.Type == gjson.Null {
		return true
	}
	n, err := strconv.ParseUint(v.Raw, 10, 62)
	if v.Type != gjson.Number || err != nil {
		return false
	}
	*dst = int64(n)
	return true
}
