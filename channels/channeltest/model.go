package channeltest

import (
	"bytes"
	"log/slog"
	"sync"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// The scripted model is core's shared fake (coretest.Model); these names keep the adapter
// tests' spelling.
type Model = coretest.Model

// NewModel returns an empty Model.
func NewModel() *Model { return coretest.NewModel() }

// ToolCall is a model answer calling one tool with args.
func ToolCall(name string, args any) core.ModelResponse { return coretest.ToolCall(name, args) }

// Proposal is an exit_plan_mode answer with the given steps.
func Proposal(title string, steps ...string) core.ModelResponse {
	return coretest.Proposal(title, steps...)
}

// Progress is an update_plan answer (merge) setting each step's status.
func Progress(steps map[string]string) core.ModelResponse { return coretest.Progress(steps) }

// LogBuffer is a slog destination tests can search (for leaked tokens, say).
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// NewLogger logs everything, debug included, as text into w.
func NewLogger(w *LogBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
