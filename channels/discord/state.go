package discord

import (
	"context"

	"github.com/plangate/plangate/channels"
)

// approvalRecord remembers the messages that carry one plan version's buttons (the plan
// and any nudges), so the engine's ReplyDecided, which names only the approval id, can
// show the decision on them and remove the buttons; and so a late Revise click can say
// what was decided instead of opening a modal for nothing.
type approvalRecord struct {
	Msgs    []sentMsg `json:"msgs"`
	Decided string    `json:"decided,omitempty"` // the engine's decision text, once decided
}

// sentMsg is one message with decision buttons, and its content as sent, to which the
// decision line is added.
type sentMsg struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
	Content string `json:"content"`
}

func approvalKey(id string) string { return "approval:" + id }

func (c *Channel) loadApproval(ctx context.Context, id string) (approvalRecord, bool, error) {
	return channels.LoadJSON[approvalRecord](ctx, c.st, Name, c.botID, approvalKey(id))
}

func (c *Channel) saveApproval(ctx context.Context, id string, r approvalRecord) error {
	return channels.SaveJSON(ctx, c.st, Name, c.botID, approvalKey(id), r)
}

// rememberButtons adds a sent message to the record of each approval it carries buttons of.
func (c *Channel) rememberButtons(ctx context.Context, ids []string, m sentMsg) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	for _, id := range ids {
		r, _, err := c.loadApproval(ctx, id)
		if err != nil {
			c.log.Error("loading approval record", "chat", m.Channel, "err", err)
		}
		r.Msgs = append(r.Msgs, m)
		if err := c.saveApproval(ctx, id, r); err != nil {
			// The message went out; only retiring its buttons later is at risk.
			c.log.Error("saving approval record", "chat", m.Channel, "err", err)
		}
	}
}

// markDecided stores the decision of an approval and returns its record; ok is false when
// no message of this bot carries its buttons.
func (c *Channel) markDecided(ctx context.Context, id, decision string) (approvalRecord, bool) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	r, ok, err := c.loadApproval(ctx, id)
	if err != nil {
		c.log.Error("loading approval record", "err", err)
		return approvalRecord{}, false
	}
	if !ok {
		return approvalRecord{}, false
	}
	r.Decided = decision
	if err := c.saveApproval(ctx, id, r); err != nil {
		c.log.Error("saving approval record", "err", err)
	}
	return r, true
}
