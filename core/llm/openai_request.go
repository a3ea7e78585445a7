package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/plangate/plangate/core"
)

// participantName is the pattern the Chat Completions API accepts for a message's name.
var participantName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// emptySchema is offered for a tool that declares no parameters: some servers reject a
// function without a parameters object.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest is the Chat Completions request body. It is encoded here with encoding/json
// and handed to openai-go as the request body (option.WithRequestBody) rather than built
// from openai-go's param types: their encoder (reflection, and every nested MarshalJSON
// re-compacted by its parent) took 0.57 ms for a typical turn of 18 KB, against 0.1 ms
// here, and was most of what the provider added to a model call. The client still does
// everything else: base URL, auth, the HTTP exchange, error and response decoding.
type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Tools       []chatTool    `json:"tools,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"` // nil: the endpoint's default
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"` // nil only for an assistant message with tool calls
	Name       string         `json:"name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
}

// chatToolCall is an assistant's tool call as it is sent back in the history. It is built
// here from the transcript, never with ChatCompletionMessage.ToParam(): that re-sends the
// raw JSON the call was decoded from, so a call whose server left out "type" would go
// back without it (openai-go then sends it as null). Type is always "function".
type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string          `json:"type"`
	Function chatFunctionDef `json:"function"`
}

type chatFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"` // the tool's schema, byte for byte
}

// body encodes the request for req and names the model it asks for: the plan model while
// planning, if one is configured.
func (o *OpenAI) body(req core.ModelRequest) ([]byte, string, error) {
	model := o.cfg.Model
	if req.Planning && o.cfg.PlanModel != "" {
		model = o.cfg.PlanModel
	}
	r := chatRequest{
		Model:       model,
		Messages:    make([]chatMessage, 0, len(req.Messages)+1),
		Temperature: o.cfg.Temperature,
	}
	if req.System != "" {
		r.Messages = append(r.Messages, chatMessage{Role: "system", Content: &req.System})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case core.RoleUser:
			u := chatMessage{Role: "user", Content: &m.Content}
			// Sender names with spaces or non-ASCII letters are not accepted as a name;
			// the message still goes, just unattributed.
			if participantName.MatchString(m.Name) {
				u.Name = m.Name
			}
			r.Messages = append(r.Messages, u)
		case core.RoleAssistant:
			a := chatMessage{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = &m.Content
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, chatToolCall{
					ID: c.ID, Type: "function",
					Function: chatFunction{Name: c.Name, Arguments: argumentsText(c.Args)},
				})
			}
			r.Messages = append(r.Messages, a)
		case core.RoleTool:
			r.Messages = append(r.Messages, chatMessage{Role: "tool", Content: &m.Content, ToolCallID: m.ToolCallID})
		default:
			return nil, "", fmt.Errorf("building the model request: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		} else if !json.Valid(schema) {
			return nil, "", fmt.Errorf("building the model request: tool %q has a parameter schema that is not valid JSON", t.Name)
		}
		r.Tools = append(r.Tools, chatTool{Type: "function", Function: chatFunctionDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // file contents and code go out as they are
	if err := enc.Encode(r); err != nil {
		return nil, "", fmt.Errorf("building the model request: %w", err)
	}
	return buf.Bytes(), model, nil
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
