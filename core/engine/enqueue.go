package engine

import (
	"context"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// A message's job is queued the same way whether its outcome goes to a channel (Enqueue)
// or to a function (EnqueueThen).

// EnqueueThen is Enqueue reporting the outcome by calling then, on the goroutine that
// handled the message, right after it (before that session's next job): an adapter that
// settles each message needs no goroutine of its own waiting on a channel for it. then must
// not block.
func (e *Engine) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	e.enqueueMessage(&job{ctx: ctx, msg: m, then: then})
}

func (e *Engine) enqueueMessage(j *job) {
	m := j.msg
	if m.ID != "" {
		j.inbound = &core.InboundKey{Channel: m.Address.Channel, Account: m.Address.Account, EventID: m.ID}
	}
	if m.Action == nil {
		j.parsed = commands.Parse(m.Text, "")
	}
	id := m.Address.SessionID()
	if c := j.parsed.Cmd; j.parsed.Kind == commands.IsCommand && (c.Name == commands.Accept || c.Name == commands.Revise) {
		if e.enqueueIdle(id, j) {
			return
		}
		j.seenApproval = e.pendingApproval(j.ctx, id)
	}
	e.enqueue(id, j, j.readOnly())
}

// finish reports a job's outcome: to then if set, else on done.
func (j *job) finish(err error) {
	if j.then != nil {
		j.then(err)
		return
	}
	j.done <- err
}
