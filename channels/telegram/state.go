package telegram

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// approvalRecord remembers the messages that carry one plan version's buttons, so that
// the engine's ReplyDecided (which names only the approval id) can retire them.
type approvalRecord = channels.Approval[sentMsg]

// sentMsg is one message with decision buttons.
type sentMsg struct {
	Chat int64 `json:"chat"`
	ID   int   `json:"id"`
	// Caption is set for a plan document: its caption as plain text, to which the decision
	// line is added. Messages without one (nudges) only lose their buttons.
	Caption string `json:"caption,omitempty"`
	Doc     bool   `json:"doc,omitempty"`
	// Buttons are the message's buttons, so a counted approval can show its progress in
	// the caption and keep them (NoteApprovals); records from before they were kept have none.
	Buttons []core.Button `json:"buttons,omitempty"`
}

// UpgradeChat implements channels.ChatUpgrader for records that kept the chat once.
func (m *sentMsg) UpgradeChat(chat json.RawMessage) {
	if m.Chat == 0 {
		_ = json.Unmarshal(chat, &m.Chat)
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
