package channels

import "sync/atomic"

// InboundNoter is implemented by channels that drop some platform events before the
// engine sees them (a redelivered Telegram update, a retried Slack event already in the
// inbox) and report them through fn, so /metrics counts redeliveries too.
type InboundNoter interface {
	NoteInbound(fn func(outcome string))
}

// InboundDuplicate is the outcome an adapter reports for an event it had received before.
const InboundDuplicate = "duplicate"

// Dropped holds the function an adapter reports dropped events to; the zero value reports
// nothing. It may be set while Run is receiving.
type Dropped struct{ fn atomic.Pointer[func(string)] }

// Set makes fn the function Note calls; nil stops reporting.
func (d *Dropped) Set(fn func(outcome string)) { d.fn.Store(&fn) }

// Note reports one dropped event with outcome.
func (d *Dropped) Note(outcome string) {
	if fn := d.fn.Load(); fn != nil && *fn != nil {
		(*fn)(outcome)
	}
}
