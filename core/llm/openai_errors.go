package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// Causes of the two deadlines Complete sets, to tell them apart from the caller's.
var (
	errTurnBudget     = errors.New("model turn budget exhausted")
	errAttemptTimeout = errors.New("model request timed out")
)

// serverMessageLimit bounds how much of an endpoint's own error text an error repeats.
const serverMessageLimit = 160

// modelError is what Complete returns for a failed call: a message fit for the chat, and
// the underlying error (an *openai.Error, a network or a context error) for errors.Is/As.
// The message is built from the status, the error code and the endpoint's scheme and
// host; the URL path and query, headers and the API key never go into it.
type modelError struct {
	msg string
	err error
}

func (e *modelError) Error() string { return e.msg }
func (e *modelError) Unwrap() error { return e.err }

// failure describes one failed attempt.
type failure struct {
	base   string // what went wrong
	again  string // appended after several tries, with the count: " and still refused after %d tries"
	tail   string // the endpoint's own words, if any: ": ..."
	status int    // HTTP status, 0 when there was no answer
	retry  bool
	wait   time.Duration // the delay the server asked for; -1 when it did not say
	// cancelled: the caller's context ended; err is returned as it is.
	cancelled bool
	err       error
}

func (f *failure) message(tries int) string {
	if tries > 1 && f.again != "" {
		return f.base + fmt.Sprintf(f.again, tries) + f.tail
	}
	return f.base + f.tail
}

// classify explains why an attempt for model failed. ctx is the caller's context, actx
// the attempt's (bounded by the turn budget and the request timeout).
func (o *OpenAI) classify(ctx, actx context.Context, res *http.Response, err error, model string) *failure {
	if ctx.Err() != nil {
		return &failure{cancelled: true, err: fmt.Errorf("calling the model: %w", ctx.Err())}
	}
	if actx.Err() != nil {
		switch context.Cause(actx) {
		case errTurnBudget:
			return &failure{base: fmt.Sprintf("the model endpoint at %s did not finish within the turn budget of %s", o.endpoint, o.cfg.TurnBudget), again: " (%d tries)", wait: -1, err: err}
		case errAttemptTimeout:
			// Not retried: a model that did not answer within the timeout rarely does on
			// the next try, and the person in the chat would wait a multiple of it.
			return &failure{base: fmt.Sprintf("the model endpoint at %s did not answer within %s", o.endpoint, o.cfg.Timeout), wait: -1, err: err}
		}
	}
	var ae *openai.Error
	switch {
	case errors.As(err, &ae):
		code, msg := ae.Code, ae.Message
		if msg == "" && code == "" {
			code, msg = bodyError(res)
		}
		return o.statusFailure(ae.StatusCode, code, msg, model, res, err)
	case res != nil && res.StatusCode >= 400:
		// The library could not read the error body (Ollama sends {"error":"text"}).
		code, msg := bodyError(res)
		return o.statusFailure(res.StatusCode, code, msg, model, res, err)
	case res != nil:
		return &failure{base: fmt.Sprintf("the model endpoint at %s sent an answer that is not a chat completion (%s)", o.endpoint, o.clean(err.Error())), status: res.StatusCode, wait: -1, err: err}
	}
	return &failure{
		base:  fmt.Sprintf("the model endpoint at %s could not be reached (%s)", o.endpoint, netReason(err)),
		again: " after %d tries",
		retry: true,
		wait:  -1,
		err:   err,
	}
}

// statusFailure explains an HTTP error answer.
func (o *OpenAI) statusFailure(status int, code, msg, model string, res *http.Response, err error) *failure {
	f := &failure{status: status, wait: -1, err: err}
	if _, numeric := strconv.Atoi(code); numeric == nil {
		code = "" // llama.cpp and vLLM repeat the status as the code
	}
	msg = o.clean(msg)
	lower := strings.ToLower(code + " " + msg)
	label := strconv.Itoa(status)
	if code != "" {
		label += " " + o.clean(code)
	}
	switch {
	case status == http.StatusUnauthorized && o.cfg.APIKey == "":
		// The endpoint's text is left out of a 401: OpenAI's names part of the key.
		f.base = "the model endpoint requires an API key (401); set llm.api_key"
	case status == http.StatusUnauthorized:
		f.base = "the model endpoint refused the API key (401); check llm.api_key"
	case status == http.StatusForbidden:
		f.base = fmt.Sprintf("the model endpoint denied access (%s); check llm.api_key and the model's permissions", label)
		f.tail = colon(msg)
	case status == http.StatusNotFound && (code == "model_not_found" || strings.Contains(lower, "model")):
		f.base = fmt.Sprintf("model %q was not found at the endpoint (404)", model)
	case status == http.StatusNotFound:
		f.base = fmt.Sprintf("the endpoint at %s has no chat completions API (404); check llm.base_url (it usually ends in /v1)", o.endpoint)
	case status == http.StatusRequestEntityTooLarge || contextTooLong(lower):
		f.base = fmt.Sprintf("the conversation is too long for the model's context (%s)", label)
	case status == http.StatusTooManyRequests && code == "insufficient_quota":
		f.base = "the model endpoint refused: the account's quota is used up (429 insufficient_quota)"
	case status == http.StatusTooManyRequests:
		// The endpoint's text is left out: OpenAI's names the organization.
		f.base, f.again, f.retry = "the model endpoint is overloaded (429)", " and still refused after %d tries", true
	case status >= 500:
		f.base = fmt.Sprintf("the model endpoint at %s had a server error (%d %s)", o.endpoint, status, http.StatusText(status))
		f.again, f.tail, f.retry = " and still failed after %d tries", colon(msg), true
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		f.base = fmt.Sprintf("the model endpoint rejected the request (%s)", label)
		f.tail = colon(msg)
	default:
		f.base = fmt.Sprintf("the model endpoint answered %d %s", status, http.StatusText(status))
		f.tail = colon(msg)
	}
	if f.retry && res != nil {
		if d, ok := retryAfter(res.Header, time.Now()); ok {
			f.wait = d
		}
	}
	return f
}

// contextTooLong recognises the ways servers say the prompt does not fit.
func contextTooLong(lower string) bool {
	for _, s := range []string{"context_length_exceeded", "context length", "context window", "maximum context", "too many tokens", "prompt is too long"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// bodyError reads an error body the library could not: {"error":"text"} (Ollama),
// {"message":...,"code":...} at the top level (vLLM), or OpenAI's {"error":{...}}.
func bodyError(res *http.Response) (code, msg string) {
	if res == nil || res.Body == nil {
		return "", ""
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return "", ""
	}
	return errorText(data)
}

// errorText finds the error code and message in a JSON error document.
func errorText(data []byte) (code, msg string) {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(data, &b) != nil {
		return "", "" // an HTML error page says nothing worth repeating
	}
	var s string
	if json.Unmarshal(b.Error, &s) == nil {
		return "", s
	}
	var inner struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(b.Error, &inner) == nil && inner.Message != "" {
		return stringCode(inner.Code), inner.Message
	}
	return stringCode(b.Code), b.Message
}

// stringCode returns a code if it is a string; numeric codes only repeat the status.
func stringCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// netReason says why a connection failed, without the URL that url.Error carries.
func netReason(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	switch {
	case errors.As(err, &dns):
		return "host not found"
	case errors.As(err, &op) && op.Err != nil:
		return oneLine(op.Err.Error(), serverMessageLimit)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before an answer"
	case errors.As(err, &ue) && ue.Err != nil:
		return oneLine(ue.Err.Error(), serverMessageLimit)
	}
	return "connection failed"
}

// retryAfter reads the delay a server asked for: retry-after-ms, or Retry-After in
// seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// clean makes endpoint-supplied text fit one line of a chat and removes the key if the
// endpoint repeated it.
func (o *OpenAI) clean(s string) string {
	if k := o.cfg.APIKey; len(k) >= 4 {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return oneLine(s, serverMessageLimit)
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit]) + "…"
	}
	return s
}

func colon(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
