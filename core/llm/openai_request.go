package llm

import (
	"encoding/json"

	"github.com/plangate/plangate/core"
)

// body encodes the request for req (openai_encode.go) for the plan model (plan) or
// llm.model, and names the model it asks for. openai-go gets it as the request
// body (option.WithRequestBody): its param types' encoder, reflection with every nested
// MarshalJSON re-compacted by its parent, costs more than the rest of the provider's work
// in a call. openai-go still makes the call: base URL, auth, the HTTP exchange, errors.
func (o *OpenAI) body(req core.ModelRequest, plan bool) ([]byte, string, error) {
	model, prefix := o.cfg.Model, o.prefix
	if plan {
		model, prefix = o.cfg.PlanModel, o.planPrefix
	}
	b := make([]byte, 0, o.lastBody.Load()+512)
	b = append(b, prefix...)
	if req.System != "" {
		b = append(b, o.systemJSON(req.System)...)
	}
	for i := range req.Messages {
		if i > 0 || req.System != "" {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMessage(b, &req.Messages[i], i); err != nil {
			return nil, "", err
		}
	}
	b = append(b, ']')
	tools, err := o.toolsJSON(req.Tools)
	if err != nil {
		return nil, "", err
	}
	b = append(b, tools...)
	if o.tempErr != nil {
		return nil, "", o.tempErr
	}
	b = append(b, o.temperature...)
	b = append(b, "}\n"...) // json.Encoder ended the body with a newline
	o.lastBody.Store(int64(len(b)))
	return b, model, nil
}

// toolArgs turns the arguments string of a tool call into the JSON the engine decodes.
// Valid JSON passes through as it is. Anything else — the model's JSON was cut short or
// malformed — is wrapped as a JSON string: the transcript stays valid JSON, and the
// engine's strict decoding into an object fails, so the model gets a tool error and can
// retry the call. An empty string means no arguments.
func toolArgs(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// argumentsText is the inverse of toolArgs for the history sent back to the model: a
// JSON string is most likely the model's malformed arguments wrapped by toolArgs, so the
// model is shown exactly what it wrote.
func argumentsText(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}
