// Package channels connects plangate to chat platforms. A Channel turns platform events into
// core.Message values for a Handler (the engine) and delivers core.Reply values back; what
// only some platforms can do (editing a sent message, a typing indicator) is an optional
// interface tested for at run time, the way net/http treats Flusher. The Hub runs every
// configured channel and routes replies by address, so the engine sees one core.Sender.
//
// Each platform lives in its own sub-package (terminal, telegram, slack, discord); none
// imports another. What they share lives here: the transport (Policy's retry loop, Pacer's
// rate limits, Scrubber), the Inbox of received events, the Ledger of which messages carry
// which approval's buttons (behind Retirer), the markdown renderers and the splitting at
// platform limits. channeltest holds a fake channel, the conformance suite adapters pass,
// and the harness (Env) their tests run in.
package channels

import (
	"context"

	"github.com/plangate/plangate/core"
)

// Handler takes normalized inbound messages. The engine implements it: EnqueueThen queues m
// for its conversation and calls then with m's outcome once it is handled, on the engine's
// goroutine, so an adapter needs no goroutine per message. Messages queued for one
// conversation are handled in the order EnqueueThen was called. then is called exactly
// once and must not block; an adapter that acknowledges an event only once it is handled
// (a Telegram update offset) does so in then.
type Handler interface {
	EnqueueThen(ctx context.Context, m core.Message, then func(error))
}

// HandlerFunc adapts a function to Handler: EnqueueThen calls f(ctx, m) and then then with
// its result, before returning. Test doubles use it.
type HandlerFunc func(ctx context.Context, m core.Message) error

// EnqueueThen calls then(f(ctx, m)).
func (f HandlerFunc) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	then(f(ctx, m))
}

// Handle hands m to h and waits for its outcome, or for ctx to end: for callers that
// answer one message at a time (the terminal).
func Handle(ctx context.Context, h Handler, m core.Message) error {
	done := make(chan error, 1)
	h.EnqueueThen(ctx, m, func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Channel is one chat platform connection.
type Channel interface {
	// Name is the platform name used in core.Address.Channel: "terminal", "telegram", ...
	Name() string
	// Run receives events and hands them to h until ctx ends or the input ends. It returns
	// nil in both cases and an error only when receiving fails. A Handler error concerns
	// one message; Run reports it and goes on.
	Run(ctx context.Context, h Handler) error
	// Send delivers r as a new message (or as many as the platform's limits need) and
	// returns the platform id of the first, or "" when there was nothing to show.
	//
	// The Hub guarantees: r.To.Channel is this channel's Name; r.ReplaceID is empty (the
	// Hub edits through Editor); r.Kind is never ReplyApprovals (see ApprovalNoter), nor
	// ReplyDecided when the channel is a Retirer. Send may be called from several
	// goroutines at once, and after Run has returned (a turn finishing during shutdown).
	Send(ctx context.Context, r core.Reply) (string, error)
}

// Retirer is implemented by channels whose messages carry decision buttons (Accept,
// Revise, Auto). The Hub hands it a ReplyDecided (r.Ref is the approval id, r.Text the
// decision) instead of calling Send, and it takes that plan version's buttons off every
// message that carried them (a Ledger remembers which), usually showing the decision.
type Retirer interface {
	Retire(ctx context.Context, r core.Reply) error
}

// ApprovalNoter is implemented by channels that can show a pending version's approvals so
// far (a ReplyApprovals: r.Ref is the approval id, r.Text the progress) on the messages
// that carry its buttons, keeping them. The Hub drops a ReplyApprovals for other channels.
type ApprovalNoter interface {
	NoteApprovals(ctx context.Context, r core.Reply) error
}

// Editor is implemented by channels that can change a message they sent earlier, so a
// progress checklist is one message. An edit that changes nothing must return nil: an
// error makes the Hub send the reply anew.
type Editor interface {
	Edit(ctx context.Context, id string, r core.Reply) error
}

// Drafter is implemented by Editors whose edits change the message where it is (not by
// the terminal, which prints an edit again): a reply can then be shown as a draft while
// the model writes it, edited as it grows.
type Drafter interface {
	Editor
	EditsInPlace()
}

// Typer is implemented by channels that can show a "typing" indicator while the agent works.
type Typer interface {
	Typing(ctx context.Context, a core.Address) error
}
