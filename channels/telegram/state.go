package telegram

import (
	"context"
	"slices"
	"strconv"

	"github.com/plangate/plangate/channels"
)

// approvalRecord remembers the messages that carry one plan version's buttons, so that
// the engine's ReplyDecided (which names only the approval id) can retire them.
type approvalRecord struct {
	Chat    int64     `json:"chat"`
	Thread  int       `json:"thread,omitempty"`
	Msgs    []sentMsg `json:"msgs"`
	Decided string    `json:"decided,omitempty"` // the decision line, once decided
}

// sentMsg is one message with decision buttons.
type sentMsg struct {
	ID int `json:"id"`
	// Caption is set for a plan document: its caption as plain text, to which the decision
	// line is added. Messages without one (nudges) only lose their buttons.
	Caption string `json:"caption,omitempty"`
	Doc     bool   `json:"doc,omitempty"`
}

func approvalKey(id string) string { return "approval:" + id }

func (c *Channel) loadApproval(ctx context.Context, id string) (approvalRecord, bool, error) {
	return channels.LoadJSON[approvalRecord](ctx, c.st, Name, c.account, approvalKey(id))
}

func (c *Channel) saveApproval(ctx context.Context, id string, r approvalRecord) error {
	return channels.SaveJSON(ctx, c.st, Name, c.account, approvalKey(id), r)
}

// rememberButtons adds a sent message to the record of an approval.
func (c *Channel) rememberButtons(ctx context.Context, approval string, chat int64, thread int, m sentMsg) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	r, ok, err := c.loadApproval(ctx, approval)
	if err != nil {
		c.log.Error("loading approval record", "chat", chat, "err", err)
	}
	if !ok {
		r = approvalRecord{Chat: chat, Thread: thread}
	}
	r.Msgs = append(r.Msgs, m)
	if err := c.saveApproval(ctx, approval, r); err != nil {
		// The message went out; only retiring its buttons later is at risk.
		c.log.Error("saving approval record", "chat", chat, "err", err)
	}
}

func promptKey(chat int64, msgID int) string {
	return "prompt:" + strconv.FormatInt(chat, 10) + ":" + strconv.Itoa(msgID)
}

// promptApproval reports which approval a "What should change?" prompt belongs to.
func (c *Channel) promptApproval(ctx context.Context, chat int64, msgID int) (string, bool) {
	v, ok, err := c.st.ChannelState(ctx, Name, c.account, promptKey(chat, msgID))
	if err != nil {
		c.log.Error("loading revise prompt", "chat", chat, "err", err)
		return "", false
	}
	return v, ok && v != ""
}

func questionKey(session string) string { return "question:" + session }

// setQuestionMsgs records the messages whose answer buttons belong to the open question;
// with add set, msgID joins them (a nudge repeating the question) instead of replacing them.
func (c *Channel) setQuestionMsgs(ctx context.Context, session string, msgID int, add bool) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	var ids []int
	if add {
		ids, _ = c.questionMsgs(ctx, session)
	}
	ids = append(ids, msgID)
	if err := channels.SaveJSON(ctx, c.st, Name, c.account, questionKey(session), ids); err != nil {
		c.log.Error("saving question buttons", "session", session, "err", err)
	}
}

func (c *Channel) questionMsgs(ctx context.Context, session string) ([]int, bool) {
	ids, ok, err := channels.LoadJSON[[]int](ctx, c.st, Name, c.account, questionKey(session))
	if err != nil || !ok {
		return nil, false
	}
	return ids, true
}

// questionOpen reports whether answer buttons on message msgID belong to the question
// most recently asked in session: option numbers of an older question must not answer a
// newer one. With nothing recorded the engine judges.
func (c *Channel) questionOpen(ctx context.Context, session string, msgID int) bool {
	ids, ok := c.questionMsgs(ctx, session)
	return !ok || slices.Contains(ids, msgID)
}
