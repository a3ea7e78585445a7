package llm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// OpenAIConfig configures the openai provider. It reads nothing from the environment:
// cmd/plangate expands ${OPENAI_API_KEY} in the config file, and what it passes here is
// all the provider uses.
type OpenAIConfig struct {
	BaseURL     string        // "" = the library default (the OpenAI API)
	APIKey      string        // may be "" for local servers (Ollama); never logged or echoed
	Model       string        // required
	PlanModel   string        // used when the request is made while planning; "" = Model
	Temperature *float64      // nil = the endpoint's default; sent only when set
	Timeout     time.Duration // per request; 0 = none
	MaxRetries  int           // retries on 429, 5xx and connection errors
	TurnBudget  time.Duration // total time one Complete may take including retries; 0 = none
	HTTPClient  *http.Client  // optional, for tests
}

// OpenAI is the openai model provider: any OpenAI-compatible Chat Completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp server, OpenRouter). It is safe for concurrent use.
type OpenAI struct {
	svc      openai.ChatCompletionService
	models   openai.ModelService // for Probe
	cfg      OpenAIConfig
	endpoint string // scheme://host of the base URL, the only part of it errors show
	log      *slog.Logger
	// baseDelay is the first backoff step; later steps double it up to maxBackoff. Tests
	// shorten it.
	baseDelay time.Duration

	// What every request body shares, encoded once (see openai_encode.go).
	prefix, planPrefix []byte // up to the first message, for Model and PlanModel
	temperature        string // the temperature member, "" when unset
	tempErr            error  // a temperature encoding/json refuses (NaN, infinities)
	tools              atomic.Pointer[toolsEntry]
	system             atomic.Pointer[systemEntry]
	lastBody           atomic.Int64 // the size of the last body, to allocate the next at once

	// The plan model's last failure (see Complete): its words and until when it is left
	// alone; now is the clock for that, time.Now outside tests.
	planMu    sync.Mutex
	planWhy   string
	planUntil time.Time
	now       func() time.Time
}

var _ core.Model = (*OpenAI)(nil)

const (
	defaultBaseDelay = 500 * time.Millisecond
	maxBackoff       = 8 * time.Second
	// maxRetryAfter is the longest wait a server may ask for; asking for more ends the
	// call, because a person is waiting in the chat and would rather retry later.
	maxRetryAfter = 60 * time.Second
)

// idleConns is how many keep-alive connections to the model endpoint are kept: one for
// every session asking at once. net/http keeps two per host by default, so with more
// sessions in a model call every other call opened, and then dropped, a connection.
const idleConns = 64

// newTransport is net/http's default transport with a keep-alive pool sized for
// concurrent model calls. Compression stays as it is: Go's Accept-Encoding: gzip costs
// nothing when the server does not compress (local servers do not), and a remote API's
// gzip saves more on the wire than inflating costs.
func newTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, idleConns)
	t.MaxIdleConnsPerHost = idleConns
	return t
}

// NewOpenAI builds the provider. The client is built only from cfg — never from OPENAI_*
// environment variables — and with the library's own retries off: Complete retries
// itself, so it controls the backoff, Retry-After, the turn budget and the error message.
func NewOpenAI(cfg OpenAIConfig, log *slog.Logger) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai provider: llm.model is empty")
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("openai provider: llm.max_retries must not be negative, got %d", cfg.MaxRetries)
	}
	if cfg.Timeout < 0 || cfg.TurnBudget < 0 {
		return nil, errors.New("openai provider: timeouts must not be negative")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// A client of our own rather than http.DefaultClient, so nothing else in the process
		// can change how model calls are made; timeouts come from the request context.
		hc = &http.Client{Transport: newTransport()}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithEnvironmentProduction(), // the default base URL when none is set
	}
	endpoint := "the OpenAI API"
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL itself is not repeated: it may carry credentials.
			return nil, errors.New("openai provider: llm.base_url must be an http:// or https:// URL such as http://localhost:11434/v1")
		}
		endpoint = u.Scheme + "://" + u.Host
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	// NewChatCompletionService, unlike openai.NewClient, applies only the options given
	// here: NewClient would add OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ADMIN_KEY,
	// OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS from the environment, and
	// with an empty APIKey an admin key found there would be sent to a local server.
	temperature, tempErr := encodeTemperature(cfg.Temperature)
	return &OpenAI{
		svc:         openai.NewChatCompletionService(opts...),
		models:      openai.NewModelService(opts...),
		cfg:         cfg,
		endpoint:    endpoint,
		log:         log,
		baseDelay:   defaultBaseDelay,
		now:         time.Now,
		prefix:      modelPrefix(cfg.Model),
		planPrefix:  modelPrefix(cfg.PlanModel),
		temperature: temperature,
		tempErr:     tempErr,
	}, nil
}

// Complete sends one Chat Completions request, retrying on 429, 5xx and connection errors.
// Its errors are one readable line without secrets, meant for the chat.
//
// A planning request goes to llm.plan_model when one is set. That model gets one attempt:
// when it fails (unknown model, refused key, timeout, server error), the same request goes
// to llm.model with the usual retries, the response says so (Fallback), and for
// planDownFor the plan model is not asked again. The first failure of a run of them is
// logged as a warning, and the plan model's return as info.
func (o *OpenAI) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	if !req.Planning || o.cfg.PlanModel == "" || o.cfg.PlanModel == o.cfg.Model {
		return o.complete(ctx, req, false, o.cfg.MaxRetries)
	}
	if why, down := o.planModelDown(); down {
		resp, err := o.complete(ctx, req, false, o.cfg.MaxRetries)
		resp.Fallback = why
		return resp, err
	}
	resp, err := o.complete(ctx, req, true, 0)
	if err == nil {
		o.planModelUp()
		return resp, nil
	}
	if ctx.Err() != nil {
		return resp, err
	}
	why := o.planModelFailed(err)
	resp, err = o.complete(ctx, req, false, o.cfg.MaxRetries)
	resp.Fallback = why
	return resp, err
}

// planDownFor is how long llm.plan_model is left alone after it failed.
const planDownFor = 5 * time.Minute

// planModelDown reports whether the plan model failed within planDownFor, and why.
func (o *OpenAI) planModelDown() (string, bool) {
	o.planMu.Lock()
	defer o.planMu.Unlock()
	return o.planWhy, o.planWhy != "" && o.now().Before(o.planUntil)
}

// planModelFailed records the plan model's failure err and returns the fallback's words.
func (o *OpenAI) planModelFailed(err error) string {
	why := fmt.Sprintf("llm.plan_model %s failed (%v); planning uses llm.model %s", o.cfg.PlanModel, err, o.cfg.Model)
	o.planMu.Lock()
	first := o.planWhy == ""
	o.planWhy, o.planUntil = why, o.now().Add(planDownFor)
	o.planMu.Unlock()
	if first {
		o.log.Warn("the plan model failed; planning falls back to llm.model", "plan_model", o.cfg.PlanModel, "model", o.cfg.Model,
			"err", err.Error(), "retry_in", planDownFor)
	}
	return why
}

// planModelUp notes that the plan model answered again.
func (o *OpenAI) planModelUp() {
	o.planMu.Lock()
	was := o.planWhy != ""
	o.planWhy = ""
	o.planMu.Unlock()
	if was {
		o.log.Info("the plan model answers again", "plan_model", o.cfg.PlanModel)
	}
}

// complete is Complete for one model: the plan model (plan) or llm.model, with up to
// retries retries.
func (o *OpenAI) complete(ctx context.Context, req core.ModelRequest, plan bool, retries int) (core.ModelResponse, error) {
	body, model, err := o.body(req, plan)
	if err != nil {
		return core.ModelResponse{}, err
	}
	start := time.Now()

	callCtx := ctx
	var deadline time.Time
	if o.cfg.TurnBudget > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, o.cfg.TurnBudget, errTurnBudget)
		defer cancel()
		deadline, _ = callCtx.Deadline()
	}

	// Jittered, so many sessions hitting one rate limit do not retry in step.
	waits := backoff.Jittered(o.baseDelay, maxBackoff)
	for try := 1; ; try++ {
		a, f := o.attempt(ctx, callCtx, body, model)
		if f == nil {
			resp, err := o.response(a, model)
			o.logCall(req, model, start, try, a, err)
			return resp, err
		}
		if f.cancelled {
			return core.ModelResponse{}, f.err
		}
		if !f.retry || try > retries {
			return core.ModelResponse{}, o.fail(req, model, start, try, f, "")
		}
		delay := f.wait
		if delay < 0 {
			delay = waits.NextBackOff()
		}
		if delay > maxRetryAfter {
			return core.ModelResponse{}, o.fail(req, model, start, try, f,
				fmt.Sprintf("; it asked to wait %s, try again later", delay.Round(time.Second)))
		}
		if !deadline.IsZero() && time.Now().Add(delay).After(deadline) {
			return core.ModelResponse{}, o.fail(req, model, start, try, f,
				fmt.Sprintf("; gave up within the turn budget of %s", o.cfg.TurnBudget))
		}
		o.log.Debug("model call failed, retrying", "model", model, "try", try, "status", f.status, "delay", delay)
		if err := backoff.Sleep(callCtx, delay); err != nil {
			if ctx.Err() != nil {
				return core.ModelResponse{}, fmt.Errorf("calling the model: %w", ctx.Err())
			}
			return core.ModelResponse{}, o.fail(req, model, start, try, f,
				fmt.Sprintf("; gave up within the turn budget of %s", o.cfg.TurnBudget))
		}
	}
}

// attempt makes one request. ctx is the caller's context and callCtx the same bounded by
// the turn budget; both are needed to tell who ended a request.
func (o *OpenAI) attempt(ctx, callCtx context.Context, body []byte, model string) (*answer, *failure) {
	actx := callCtx
	if o.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(callCtx, o.cfg.Timeout, errAttemptTimeout)
		defer cancel()
	}
	if onText := streamTo(ctx); onText != nil {
		return o.attemptStream(ctx, actx, body, model, onText) // openai_stream.go
	}
	var res *http.Response
	var raw []byte
	// The body replaces the empty params; see body for why it is encoded here. The answer
	// comes back as bytes, read by decodeAnswer.
	_, err := o.svc.New(actx, openai.ChatCompletionNewParams{},
		option.WithRequestBody("application/json", body), option.WithResponseInto(&res),
		option.WithResponseBodyInto(&raw))
	if err == nil {
		var a *answer
		if a, err = decodeAnswer(res, raw); err == nil {
			return a, nil
		}
	}
	return nil, o.classify(ctx, actx, res, err, model)
}

// response maps the first choice of a completion to a core response.
func (o *OpenAI) response(a *answer, model string) (core.ModelResponse, error) {
	if a.choices == 0 {
		// Some proxies (OpenRouter among them) report an upstream failure in a 200 answer.
		if _, msg := errorText(a.raw); msg != "" {
			return core.ModelResponse{}, fmt.Errorf("the model endpoint at %s answered with an error instead of a completion: %s", o.endpoint, o.clean(msg))
		}
		return core.ModelResponse{}, fmt.Errorf("the model endpoint at %s answered without any choices (model %q)", o.endpoint, model)
	}
	ch := a.first
	resp := core.ModelResponse{Text: ch.content}
	if u := a.usage; u.valid {
		resp.Usage = core.Usage{Prompt: u.prompt, Cached: u.cached, Completion: u.completion}
	}
	if resp.Text == "" && ch.refusal != "" {
		resp.Text = ch.refusal
	}
	for _, tc := range ch.calls {
		// Both variants' fields are read: they are filled whether or not the server sent
		// "type", while openai-go's AsAny() needs it.
		name, args := tc.name, tc.args
		if tc.typ == "custom" {
			name, args = tc.customName, tc.customInput
		}
		id := tc.id
		if id == "" {
			// Some local servers leave ids out; the result must still name its call, and
			// stay unambiguous among the calls of earlier turns in the history.
			id = "call_" + rand.Text()
		}
		resp.ToolCalls = append(resp.ToolCalls, core.ToolCall{ID: id, Name: name, Args: toolArgs(args)})
	}
	if resp.Text == "" && len(resp.ToolCalls) == 0 {
		return core.ModelResponse{}, fmt.Errorf("the model returned an empty answer (finish_reason %q)", ch.finishReason)
	}
	return resp, nil
}

// logCall logs a finished call at debug level: never the key, the URL or the content.
func (o *OpenAI) logCall(req core.ModelRequest, model string, start time.Time, tries int, a *answer, err error) {
	if !o.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"session", req.SessionID, "model", model, "duration", time.Since(start), "tries", tries}
	if a != nil {
		if u := a.usage; u.valid {
			attrs = append(attrs, "prompt_tokens", u.prompt, "cached_tokens", u.cached, "completion_tokens", u.completion, "total_tokens", u.total)
		}
		if a.choices > 0 {
			attrs = append(attrs, "finish_reason", a.first.finishReason, "tool_calls", len(a.first.calls))
		}
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	o.log.Debug("model call", attrs...)
}

// fail turns the last failure into the error Complete returns, and logs it.
func (o *OpenAI) fail(req core.ModelRequest, model string, start time.Time, tries int, f *failure, note string) error {
	err := &modelError{msg: f.message(tries) + note, err: f.err}
	o.logCall(req, model, start, tries, nil, err)
	return err
}
