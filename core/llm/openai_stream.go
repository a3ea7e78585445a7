package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/plangate/plangate/core"
)

// Streaming: the same request with "stream": true and usage asked for in the last chunk,
// read by openai-go's SSE decoder and folded by its ChatCompletionAccumulator, which
// already joins tool-call fragments by index and keeps the usage; the folded completion
// then goes through answerOf and response like a plain answer, so both paths agree on
// tool calls, refusals and empty answers. Retries, the turn budget and the plan model's
// fallback are Complete's: the callback rides on the context to the one attempt that
// differs (attempt), and each attempt starts the text again from its first word.

var _ core.Streamer = (*OpenAI)(nil)

// streamKey carries the caller's text callback to attempt.
type streamKey struct{}

// CompleteStream implements core.Streamer: Complete, with onText called with the answer's
// text so far as chunks arrive.
func (o *OpenAI) CompleteStream(ctx context.Context, req core.ModelRequest, onText func(string)) (core.ModelResponse, error) {
	if onText == nil {
		return o.Complete(ctx, req)
	}
	return o.Complete(context.WithValue(ctx, streamKey{}, onText), req)
}

// streamTo is the text callback CompleteStream put on ctx, or nil.
func streamTo(ctx context.Context) func(string) {
	fn, _ := ctx.Value(streamKey{}).(func(string))
	return fn
}

// attemptStream is attempt for a streamed answer; onText gets the text so far.
func (o *OpenAI) attemptStream(ctx, actx context.Context, body []byte, model string, onText func(string)) (*answer, *failure) {
	var res *http.Response
	stream := o.svc.NewStreaming(actx, openai.ChatCompletionNewParams{},
		option.WithRequestBody("application/json", body),
		option.WithJSONSet("stream_options", map[string]bool{"include_usage": true}),
		option.WithResponseInto(&res))
	defer stream.Close()
	if res != nil && res.StatusCode < 300 && isJSON(res.Header.Get("content-type")) {
		// A server that ignores "stream" answers with the whole completion at once.
		raw, err := io.ReadAll(res.Body)
		if err == nil {
			var a *answer
			if a, err = decodeAnswer(res, raw); err == nil {
				if a.choices > 0 && a.first.content != "" {
					onText(a.first.content)
				}
				return a, nil
			}
		}
		return nil, o.classify(ctx, actx, res, err, model)
	}
	var acc openai.ChatCompletionAccumulator
	shown := ""
	// The usage comes in a last chunk of its own (stream_options.include_usage); the
	// accumulator's copy of it loses what says it was sent, so it is kept here.
	var usage *openai.CompletionUsage
	for stream.Next() {
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() && chunk.Usage.JSON.TotalTokens.Valid() {
			u := chunk.Usage
			usage = &u
		}
		if !acc.AddChunk(chunk) {
			return nil, o.brokenStream(fmt.Errorf("a chunk that does not follow the ones before it"))
		}
		if len(acc.Choices) > 0 {
			if text := acc.Choices[0].Message.Content; text != shown {
				shown = text
				onText(text)
			}
		}
	}
	if err := stream.Err(); err != nil {
		if res == nil || res.StatusCode >= 400 || ctx.Err() != nil || actx.Err() != nil {
			return nil, o.classify(ctx, actx, res, err, model)
		}
		var se *ssestream.StreamError
		if errors.As(err, &se) {
			detail := strings.TrimPrefix(se.Message, "received error while streaming: ")
			_, msg := errorText([]byte(`{"error":` + detail + `}`))
			if msg == "" {
				msg = detail
			}
			return nil, &failure{base: fmt.Sprintf("the model endpoint at %s reported an error while answering: %s", o.endpoint, o.clean(msg)), status: res.StatusCode, wait: -1, err: err}
		}
		return nil, o.brokenStream(err)
	}
	if res == nil {
		return nil, o.classify(ctx, actx, res, errors.New("no answer"), model)
	}
	if len(acc.Choices) > 0 && acc.Choices[0].FinishReason == "" {
		// Every server ends a choice with its finish_reason; a stream without one was cut.
		return nil, o.brokenStream(errors.New("the stream ended before the answer did"))
	}
	a := answerOf(&acc.ChatCompletion)
	if usage != nil {
		a.usage = usageOf(*usage)
	}
	return a, nil
}

// brokenStream is a stream that ended before its last chunk: a connection lost mid-answer
// is tried again like one lost before it.
func (o *OpenAI) brokenStream(err error) *failure {
	return &failure{
		base:  fmt.Sprintf("the model endpoint at %s broke off its answer (%s)", o.endpoint, o.clean(err.Error())),
		again: " after %d tries",
		retry: true,
		wait:  -1,
		err:   err,
	}
}
