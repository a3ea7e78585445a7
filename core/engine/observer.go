package engine

import (
	"context"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Observer is told what the engine does, for /metrics (package metrics satisfies it).
// Every method is called on the hot path and must be cheap and safe for concurrent use.
type Observer interface {
	// Decision counts one committed decision by its audit kind (accepted, auto_accepted,
	// revised, abandoned, aborted, expired, refused).
	Decision(kind string)
	// ModelRequest observes one model call: outcome ok or error.
	ModelRequest(outcome string, d time.Duration)
	// ModelTokens counts one answered call's usage by phase (planning, executing, chat);
	// a call that reported none is all zeros.
	ModelTokens(phase string, prompt, cached, completion int64)
	// ToolCall counts one gated tool call: outcome ran, blocked or failed.
	ToolCall(tool, outcome string)
	// Nudge counts one reminder occurrence: fired or missed.
	Nudge(outcome string)
	// PlansPending sets how many plan versions wait for a decision.
	PlansPending(n int)
	// Inbound counts one person's message or platform event by channel and outcome:
	// handled, duplicate (a redelivery), refused (a bot, or a decision the rules
	// refused) or failed (the handler returned an error).
	Inbound(channel, outcome string)
	// OutboxDropped counts one reply given up by channel and reason: expired (older than
	// channels.outbox_max_age), refused (the platform refused it for good) or told (it
	// could not be delivered and the chat got the reply's own notice instead).
	OutboxDropped(channel, reason string)
	// AccessRefused counts one message the access gate refused before it was queued, by
	// channel and reason: not_allowed or throttled (such messages are not counted by
	// Inbound).
	AccessRefused(channel, reason string)
}

// Inbound outcomes other than handled and failed, set on the job where they are known.
const (
	inboundDuplicate = "duplicate"
	inboundRefused   = "refused"
)

// observeInbound reports what became of the message of j.
func (e *Engine) observeInbound(j *job, err error) {
	outcome := j.outcome
	switch {
	case err != nil:
		outcome = "failed"
	case outcome == "":
		outcome = "handled"
	}
	e.obs.obs.Inbound(j.msg.Address.Channel, outcome)
}

// nopObserver is the Observer of an engine without one.
type nopObserver struct{}

func (nopObserver) Decision(string)                         {}
func (nopObserver) ModelRequest(string, time.Duration)      {}
func (nopObserver) ModelTokens(string, int64, int64, int64) {}
func (nopObserver) ToolCall(string, string)                 {}
func (nopObserver) Nudge(string)                            {}
func (nopObserver) PlansPending(int)                        {}
func (nopObserver) Inbound(string, string)                  {}
func (nopObserver) OutboxDropped(string, string)            {}
func (nopObserver) AccessRefused(string, string)            {}

// observing reports pending plans: the count is read from the store (so engines on one
// store agree), one reader at a time so an older count never overwrites a newer one.
type observing struct {
	mu  sync.Mutex
	obs Observer
}

// observeCommit reports the decisions a committed change recorded, and the pending count
// when the change proposed or decided a plan. Changes without such rows cost one loop.
func (t *jobRun) observeCommit(ctx context.Context, ch core.Change) {
	e := t.e
	if e.d.Observer == nil {
		return
	}
	recount := false
	for i := range ch.Events {
		switch k := ch.Events[i].Kind; k {
		case core.EventRefused:
			e.obs.obs.Decision(string(k))
			if t.j != nil && t.j.sys == nil {
				t.j.outcome = inboundRefused
			}
		case core.EventApprovalRecorded:
			e.obs.obs.Decision(string(k)) // one of several approvals; the version stays pending
		case core.EventAccepted, core.EventAutoAccepted, core.EventRevised, core.EventAbandoned, core.EventAborted, core.EventExpired:
			e.obs.obs.Decision(string(k))
			recount = true
		case core.EventProposed, core.EventSuperseded:
			recount = true
		}
	}
	if recount {
		e.CountPending(ctx)
	}
}

// CountPending reads how many plan versions wait for a decision and reports it; a store
// that cannot say is logged and leaves the gauge alone.
func (e *Engine) CountPending(ctx context.Context) {
	if e.d.Observer == nil {
		return
	}
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	n, err := e.d.Store.PendingPlans(ctx)
	if err != nil {
		e.d.Log.Warn("counting pending plans", "err", err)
		return
	}
	e.obs.obs.PlansPending(n)
}

// observeModel reports one model call that started at start.
func (e *Engine) observeModel(start time.Time, resp core.ModelResponse, err error) {
	if e.d.Observer == nil {
		return
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case resp.Fallback != "":
		outcome = "fallback"
	}
	e.obs.obs.ModelRequest(outcome, time.Since(start))
}

// toolOutcome is the ToolCall outcome of an executed call.
func toolOutcome(err error) string {
	if err != nil {
		return "failed"
	}
	return "ran"
}
