// Package coretest has the fakes of core's ports that the tests of core, the adapters
// and the scheduler share: one scripted model.
package coretest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plangate/plangate/core"
)

// Model is a scripted core.Model for adapter tests that run a real engine: it answers from
// a queue per session, and with nothing queued it answers "ok". While a block channel is
// set (Block), calls wait for it to be closed.
//
// Benchmarks make it echo (Echo) and hold one session's agent busy (Hold).
type Model struct {
	mu       sync.Mutex
	queue    map[string][]answer
	calls    []core.ModelRequest
	hook     func(core.ModelRequest) // called first in every call, outside the lock
	block    chan struct{}
	echo     string // with nothing queued, answer this and the last user text
	echoing  bool
	held     map[string]<-chan struct{}
	finished atomic.Int64
	pieces   int    // see StreamIn
	between  func() // see StreamIn
}

// answer is one queued answer: a response or an error.
type answer struct {
	resp core.ModelResponse
	err  error
}

// NewModel returns an empty Model.
func NewModel() *Model { return &Model{queue: map[string][]answer{}} }

// Push queues answers for a session.
func (m *Model) Push(session string, rs ...core.ModelResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		m.queue[session] = append(m.queue[session], answer{resp: r})
	}
}

// Fail queues a failed call for a session: the provider's error err.
func (m *Model) Fail(session string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue[session] = append(m.queue[session], answer{err: err})
}

// Hook sets fn to be called at the start of every call, before any block and outside
// the model's lock: a test's way to act at the moment the agent asks (or to stop there).
func (m *Model) Hook(fn func(core.ModelRequest)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = fn
}

// Complete implements core.Model.
func (m *Model) Complete(ctx context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	defer m.finished.Add(1)
	m.mu.Lock()
	hook := m.hook
	m.mu.Unlock()
	if hook != nil {
		hook(req)
	}
	m.mu.Lock()
	block, held := m.block, m.held[req.SessionID]
	m.mu.Unlock()
	for _, wait := range []<-chan struct{}{block, held} {
		if wait == nil {
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return core.ModelResponse{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.echoing {
		m.calls = append(m.calls, req)
	}
	q := m.queue[req.SessionID]
	if len(q) == 0 && m.echoing {
		return core.ModelResponse{Text: m.echo + lastUser(req)}, nil
	}
	if len(q) == 0 {
		return core.ModelResponse{Text: "ok"}, nil
	}
	m.queue[req.SessionID] = q[1:]
	return q[0].resp, q[0].err
}

// Echo makes the model answer, when nothing is queued, with prefix and the last user text
// of the request, so that a reply names the message it answers. An echoing model keeps
// no calls: benchmarks make many.
func (m *Model) Echo(prefix string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.echo, m.echoing = prefix, true
}

// Hold makes calls for session wait until release is closed (or their context ends): an
// agent that is busy in the middle of a turn.
func (m *Model) Hold(session string, release <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = map[string]<-chan struct{}{}
	}
	m.held[session] = release
}

// lastUser is the newest user-role text of req.
func lastUser(req core.ModelRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == core.RoleUser && req.Messages[i].Name != core.ProgressName {
			return req.Messages[i].Content
		}
	}
	return ""
}

// Block makes later calls wait until ch is closed.
func (m *Model) Block(ch chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.block = ch
}

// Unblock closes the block channel, if one is set and still open.
func (m *Model) Unblock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.block == nil {
		return
	}
	select {
	case <-m.block:
	default:
		close(m.block)
	}
}

// CallCount is how many calls got past the block.
func (m *Model) CallCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// Calls returns the requests received so far.
func (m *Model) Calls() []core.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]core.ModelRequest(nil), m.calls...)
}

// Finished is how many calls have returned, answered or not.
func (m *Model) Finished() int64 { return m.finished.Load() }

// LastUser is the newest user-role text of the session's latest call.
func (m *Model) LastUser(session string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.calls) - 1; i >= 0; i-- {
		if m.calls[i].SessionID != session {
			continue
		}
		if text := lastUser(m.calls[i]); text != "" {
			return text
		}
	}
	return ""
}

// ToolCall is a model answer calling one tool with args.
func ToolCall(name string, args any) core.ModelResponse {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "call_" + name + "_" + rand.Text(), Name: name, Args: b}}}
}

// Proposal is an exit_plan_mode answer with the given steps.
func Proposal(title string, steps ...string) core.ModelResponse {
	var ss []map[string]any
	for _, s := range steps {
		ss = append(ss, map[string]any{"step": s})
	}
	return ToolCall("exit_plan_mode", map[string]any{"title": title, "summary": "Summary of " + title, "plan": ss})
}

// Progress is an update_plan answer (merge) setting each step's status.
func Progress(steps map[string]string) core.ModelResponse {
	var ss []map[string]any
	for s, st := range steps {
		ss = append(ss, map[string]any{"step": s, "status": st})
	}
	return ToolCall("update_plan", map[string]any{"plan": ss, "merge": true})
}

// StreamIn makes CompleteStream hand an answer's text out in n growing pieces (one word
// more each, the last the whole text) and call between before each piece, where a test
// moves its clock; 0 (the default) hands the whole text at once.
func (m *Model) StreamIn(n int, between func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pieces, m.between = n, between
}

// CompleteStream implements core.Streamer: Complete, its text handed to onText as StreamIn says.
func (m *Model) CompleteStream(ctx context.Context, req core.ModelRequest, onText func(string)) (core.ModelResponse, error) {
	resp, err := m.Complete(ctx, req)
	if err != nil || onText == nil || resp.Text == "" {
		return resp, err
	}
	m.mu.Lock()
	n, between := m.pieces, m.between
	m.mu.Unlock()
	words := strings.SplitAfter(resp.Text, " ")
	for i := 1; n > 0 && i < n && i < len(words); i++ {
		if between != nil {
			between()
		}
		onText(strings.TrimSpace(strings.Join(words[:i], "")))
	}
	if between != nil {
		between()
	}
	onText(resp.Text)
	return resp, nil
}
