package channels

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/plangate/plangate/core"
)

// Approval is what a Ledger keeps of one plan version: the messages that carry its
// decision buttons (M is the platform's record of one) and, once decided, the decision.
type Approval[M any] struct {
	Msgs    []M    `json:"msgs"`
	Decided string `json:"decided,omitempty"` // the engine's decision text, once decided
	// Chat is the conversation of all the messages, in records whose messages do not
	// name their own; Load hands it to the messages (see ChatUpgrader).
	Chat json.RawMessage `json:"chat,omitempty"`
}

// ChatUpgrader is implemented by a message record (as *M) that names its conversation:
// Load calls it with the conversation an older record kept once for all its messages.
type ChatUpgrader interface {
	UpgradeChat(chat json.RawMessage)
}

// Ledger remembers which messages carry the decision buttons of each approval, in State
// under "approval:<id>", so that a ReplyDecided (which names only the approval id) can
// retire them after a restart too, and a late click can say what was decided. Its methods
// serialize the read-modify-write of a record.
type Ledger[M any] struct {
	st      State
	channel string
	account string
	log     *slog.Logger

	mu sync.Mutex
}

// NewLedger returns the ledger of one bot account on channel. A nil log discards.
func NewLedger[M any](st State, channel, account string, log *slog.Logger) *Ledger[M] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ledger[M]{st: st, channel: channel, account: account, log: log}
}

func approvalKey(id string) string { return "approval:" + id }

// Load returns the record of approval id; ok is false when none of this account's
// messages carries its buttons.
func (l *Ledger[M]) Load(ctx context.Context, id string) (rec Approval[M], ok bool, err error) {
	rec, ok, err = LoadJSON[Approval[M]](ctx, l.st, l.channel, l.account, approvalKey(id))
	for i := range rec.Msgs {
		if u, can := any(&rec.Msgs[i]).(ChatUpgrader); can && len(rec.Chat) > 0 {
			u.UpgradeChat(rec.Chat)
		}
	}
	return rec, ok, err
}

// Add records m as carrying the buttons of each of approvals. The message went out
// already, so a failure only puts retiring its buttons later at risk: it is logged.
func (l *Ledger[M]) Add(ctx context.Context, approvals []string, m M) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range approvals {
		rec, _, err := l.Load(ctx, id)
		if err != nil {
			l.log.Error("loading approval record", "approval", id, "err", err)
		}
		rec.Msgs = append(rec.Msgs, m)
		if err := SaveJSON(ctx, l.st, l.channel, l.account, approvalKey(id), rec); err != nil {
			l.log.Error("saving approval record", "approval", id, "err", err)
		}
	}
}

// Retire records r's decision on the approval r.Ref names and calls retire for every
// message that carried its buttons, joining the failures; without a record it does nothing.
func (l *Ledger[M]) Retire(ctx context.Context, r core.Reply, retire func(ctx context.Context, m M) error) error {
	rec, ok := l.decide(ctx, r.Ref, r.Text)
	if !ok {
		return nil
	}
	var errs []error
	for _, m := range rec.Msgs {
		errs = append(errs, retire(ctx, m))
	}
	return errors.Join(errs...)
}

// decide stores the decision of approval id and returns its record.
func (l *Ledger[M]) decide(ctx context.Context, id, decision string) (Approval[M], bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok, err := l.Load(ctx, id)
	if err != nil {
		l.log.Error("loading approval record", "approval", id, "err", err)
		return Approval[M]{}, false
	}
	if !ok {
		return Approval[M]{}, false
	}
	rec.Decided = decision
	if err := SaveJSON(ctx, l.st, l.channel, l.account, approvalKey(id), rec); err != nil {
		l.log.Error("saving approval record", "approval", id, "err", err)
	}
	return rec, true
}

// ApprovalIDs lists, once each, the approvals whose decision buttons r carries.
func ApprovalIDs(r core.Reply) []string {
	var out []string
	for _, b := range r.Buttons {
		switch b.Action.Kind {
		case core.ActionAccept, core.ActionRevise, core.ActionAuto:
			if id := b.Action.ApprovalID; id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
