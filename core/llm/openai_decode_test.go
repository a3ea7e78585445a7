package llm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// slowAnswer is the answer as openai-go decodes the body: what the provider read before
// fastAnswer, and still reads when fastAnswer declines.
func slowAnswer(raw []byte) (*answer, error) {
	var comp *openai.ChatCompletion
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&comp); err != nil {
		return nil, err
	}
	return answerOf(comp), nil
}

// sameAnswer compares everything but the raw body (which openai-go trims of whitespace).
func sameAnswer(a, b *answer) bool {
	return a.choices == b.choices && a.usage == b.usage && reflect.DeepEqual(a.first, b.first)
}

// shown is an answer to print: without the raw body.
func shown(a *answer) any {
	if a == nil {
		return nil
	}
	c := *a
	c.raw = nil
	return c
}

// answerBodies are completions as servers send them, and some no server should.
var answerBodies = map[string]struct {
	body string
	fast bool // fastAnswer reads it itself
}{
	"text":            {textReply("hello <world> & \u2028 \"quoted\" \\ é").body, true},
	"tool calls":      {toolCallsReply(call("c1", "function", "read_file", `{"path":"a"}`), call("", "", "list_files", "")).body, true},
	"custom call":     {completion("tool_calls", `{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"grep","input":"x"}}]}`).body, true},
	"refusal":         {completion("stop", `{"role":"assistant","content":null,"refusal":"no"}`).body, true},
	"escaped names":   {`{"choices":[{"message":{"cont\u0065nt":"esc","content":"last"},"finish_reason":"stop"}]}`, true},
	"duplicates":      {`{"choices":[],"choices":[{"message":{"content":"a"}},{}],"usage":{"total_tokens":3},"usage":{"prompt_tokens":1}}`, true},
	"no choices":      {`{"id":"x","object":"chat.completion"}`, true},
	"error in a 200":  {`{"error":{"message":"upstream failed","code":502}}`, true},
	"null choices":    {`{"choices":null,"usage":null}`, true},
	"null message":    {`{"choices":[{"message":null,"finish_reason":"length"}]}`, true},
	"usage":           {`{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"details":{"x":1}}}`, true},
	"cached":          {`{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":2048,"completion_tokens":5,"total_tokens":2053,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}`, true},
	"null details":    {`{"choices":[],"usage":{"prompt_tokens":1,"total_tokens":1,"prompt_tokens_details":null}}`, true},
	"null cached":     {`{"choices":[],"usage":{"prompt_tokens":1,"total_tokens":1,"prompt_tokens_details":{"cached_tokens":null}}}`, true},
	"cached no total": {`{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}`, true},
	"string cached":   {`{"choices":[],"usage":{"total_tokens":1,"prompt_tokens_details":{"cached_tokens":"8"}}}`, false},
	"array details":   {`{"choices":[],"usage":{"total_tokens":1,"prompt_tokens_details":[1]}}`, false},
	"no total":        {`{"usage":{"completion_tokens":1}}`, true},
	"null total":      {`{"choices":[{"message":{"content":"a"}}],"usage":{"total_tokens":4,"total_tokens":null}}`, true},
	"surrogates":      {`{"choices":[{"message":{"content":"\ud83d\ude42 \ud800 \u0000"}}]}`, true},
	"other fields":    {`{"id":5,"created":"soon","object":"x","choices":[{"index":"a","logprobs":7,"message":{"role":1,"annotations":"no","audio":[1],"content":"ok"}}]}`, true},
	"numeric content": {`{"choices":[{"message":{"content":42}}]}`, false},
	"object content":  {`{"choices":[{"message":{"content":{"text":"a"}}}]}`, false},
	"string choices":  {`{"choices":"none"}`, false},
	"number choice":   {`{"choices":[1]}`, false},
	"second choice":   {`{"choices":[{"message":{"content":"a"}},"b"]}`, false},
	"string message":  {`{"choices":[{"message":"hi"}]}`, false},
	"string function": {`{"choices":[{"message":{"tool_calls":[{"id":"c","function":"f"}]}}]}`, false},
	"null tool call":  {`{"choices":[{"message":{"tool_calls":[null]}}]}`, false},
	"float tokens":    {`{"choices":[],"usage":{"total_tokens":15.0}}`, false},
	"string tokens":   {`{"choices":[],"usage":{"total_tokens":"15"}}`, false},
	"trailing data":   {`{"choices":[{"message":{"content":"a"}}]} {"more":1}`, false},
	"array root":      {`[{"choices":[]}]`, false},
	"null root":       {`null`, false},
	"whitespace":      {" \n{\"choices\":[{\"message\":{\"content\":\"a\"}}]}\n", true},
}

// TestFastAnswerMatchesOpenAIGo: what fastAnswer reads, openai-go reads the same; what it
// declines, decodeAnswer reads with openai-go.
func TestFastAnswerMatchesOpenAIGo(t *testing.T) {
	res := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}}
	for name, tt := range answerBodies {
		t.Run(name, func(t *testing.T) {
			raw := []byte(tt.body)
			fast, ok := fastAnswer(raw)
			if ok != tt.fast {
				t.Fatalf("fastAnswer took it: %v, want %v", ok, tt.fast)
			}
			slow, slowErr := slowAnswer(raw)
			if ok && (slowErr != nil || !sameAnswer(fast, slow)) {
				t.Errorf("fastAnswer read %+v, openai-go %+v (%v)", shown(fast), shown(slow), slowErr)
			}
			got, err := decodeAnswer(res, raw)
			if (err != nil) != (slowErr != nil) || (err == nil && !sameAnswer(got, slow)) {
				t.Errorf("decodeAnswer = %+v, %v; openai-go %+v, %v", shown(got), err, shown(slow), slowErr)
			}
		})
	}
}

func TestDecodeAnswerErrors(t *testing.T) {
	tests := []struct {
		name, contentType, body, want string
	}{
		{"not JSON", "text/html", `<html>`, "expected destination type of 'string' or '[]byte' for responses with content-type 'text/html' that is not 'application/json'"},
		{"no content type", "", `{}`, "expected destination type of 'string' or '[]byte' for responses with content-type '' that is not 'application/json'"},
		{"broken JSON", "application/json", `{"choices":[`, "error parsing response json: unexpected EOF"},
		{"root of the wrong type", "application/json; charset=utf-8", `"text"`, "error parsing response json: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &http.Response{Header: http.Header{}}
			if tt.contentType != "" {
				res.Header.Set("Content-Type", tt.contentType)
			}
			_, err := decodeAnswer(res, []byte(tt.body))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	res := &http.Response{Header: http.Header{"Content-Type": {"application/vnd.api+json"}}}
	if a, err := decodeAnswer(res, []byte(textReply("x").body)); err != nil || a.first.content != "x" {
		t.Errorf("+json: %+v, %v", shown(a), err)
	}
}

// FuzzFastAnswer: whenever fastAnswer reads a body, openai-go reads it the same.
func FuzzFastAnswer(f *testing.F) {
	for _, tt := range answerBodies {
		f.Add(tt.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fast, ok := fastAnswer([]byte(body))
		if !ok {
			return
		}
		slow, err := slowAnswer([]byte(body))
		if err != nil || !sameAnswer(fast, slow) {
			t.Errorf("body %q: fastAnswer read %+v, openai-go %+v (%v)", body, shown(fast), shown(slow), err)
		}
	})
}
