package engine

import (
	"context"
	"time"

	"github.com/plangate/plangate/core"
)

// WindowOf is the transcript window engine e keeps for session id at row version, if any
// (see windows.go).
func WindowOf(e *Engine, id string, version int64) ([]core.ChatMessage, bool) {
	return e.windows.get(id, version, e.d.Now())
}

// PlanFileWrites is how many plan files engine e has written.
func PlanFileWrites(e *Engine) int64 { return e.files.writes.Load() }

// SetRenewTimer replaces the timer of a turn's lease renewals (time.AfterFunc): after
// schedules f after d and returns its cancel.
func SetRenewTimer(e *Engine, after func(d time.Duration, f func()) func() bool) {
	e.renewAfter = after
}

// Handle queues m and waits for its outcome, or for ctx to end.
func (e *Engine) Handle(ctx context.Context, m core.Message) error {
	return waitJob(ctx, e.Enqueue(ctx, m))
}
