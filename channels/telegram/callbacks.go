package telegram

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// maxCallbackData is Telegram's limit on callback_data, in bytes.
const maxCallbackData = 64

// Toasts the adapter decides itself.
const (
	toastInvalid     = "This button is not valid."
	toastRevise      = "Revise: reply with your feedback."
	toastQuestionOld = "This question is no longer open; nothing changed."
)

// callbackData encodes a button: "a:<approval>", "r:<approval>", "u:<approval>" (auto), "n:<approval>" (undo)
// or "q:<n>" (answer option n, 1-based); ok is false when it does not fit 64 bytes or is
// not a button plangate makes.
func callbackData(a core.Action, option int) (string, bool) {
	var s string
	switch tag := channels.DecisionTag(a.Kind); {
	case a.Kind == core.ActionAnswer:
		s = "q:" + strconv.Itoa(option)
	case tag != "" && validApproval(a.ApprovalID):
		s = tag + ":" + a.ApprovalID
	default:
		return "", false
	}
	return s, len(s) <= maxCallbackData
}

// button is a decoded callback_data.
type button struct {
	kind     core.ActionKind
	approval string
	option   int
}

// parseCallback decodes callback_data; anything plangate did not make is refused.
func parseCallback(data string) (button, bool) {
	if len(data) > maxCallbackData {
		return button{}, false
	}
	tag, arg, ok := strings.Cut(data, ":")
	if !ok {
		return button{}, false
	}
	if tag == "q" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > 99 || strconv.Itoa(n) != arg {
			return button{}, false
		}
		return button{kind: core.ActionAnswer, option: n}, true
	}
	kind, ok := channels.DecisionKind(tag)
	if !ok || !validApproval(arg) {
		return button{}, false
	}
	return button{kind: kind, approval: arg}, true
}

// validApproval is channels.ValidID within what fits callback_data after its tag.
func validApproval(s string) bool { return len(s) <= maxCallbackData-2 && channels.ValidID(s) }

// fromCallback turns a button click into work. Every click is answered exactly once: by
// the adapter, or after the engine's outcome.
func (c *Channel) fromCallback(ctx context.Context, updateID int64, q *models.CallbackQuery) (job, bool) {
	m := q.Message.Message
	if m == nil || !c.allowed.Allows(m.Chat.ID) {
		// A message too old to be accessible, an inline message, or a chat we do not serve.
		c.log.Debug("a button on a message plangate does not serve", "accessible", m != nil)
		return job{local: func(ctx context.Context) { c.answer(ctx, q.ID, toastInvalid) }}, true
	}
	b, ok := parseCallback(q.Data)
	if !ok {
		c.log.Debug("a button plangate did not make", "chat", m.Chat.ID)
		return job{local: func(ctx context.Context) { c.answer(ctx, q.ID, toastInvalid) }}, true
	}
	addr := c.address(m)
	switch b.kind {
	case core.ActionRevise:
		return job{local: func(ctx context.Context) { c.revisePrompt(ctx, q, m, addr, b.approval) }}, true
	case core.ActionAnswer:
		if !c.questionOpen(ctx, addr.SessionID(), m.ID) {
			return job{local: func(ctx context.Context) { c.answer(ctx, q.ID, toastQuestionOld) }}, true
		}
	}
	msg := core.Message{
		ID:        strconv.FormatInt(updateID, 10),
		Address:   addr,
		Sender:    person(&q.From),
		Direct:    m.Chat.Type == models.ChatTypePrivate,
		Mentioned: true,
		Action:    &core.Action{Kind: b.kind, ApprovalID: b.approval},
		Time:      time.Now(), // a callback query carries no date of its own
	}
	fallback := "Received."
	switch b.kind {
	case core.ActionAccept:
		fallback = "Accept received."
	case core.ActionAuto:
		fallback = "Auto-approve received."
	case core.ActionAnswer:
		msg.Action.Value = strconv.Itoa(b.option)
		fallback = fmt.Sprintf("Answer %d received.", b.option)
	}
	t := c.toasts.expect(addr, b.approval)
	go c.answerWhenSettled(context.WithoutCancel(ctx), q.ID, t, fallback)
	return job{msg: msg, toast: t}, true
}

// planLabel reads `plan v2 "Docs cleanup"` from the first line of a plan message
// ("Plan v2 — Docs cleanup (3 steps)"), as the clicked message shows it.
var planLabel = regexp.MustCompile(`^Plan (v\d+) — (.+?)(?: \(\d+ steps?\)| \([a-z_]+\))?$`)

func labelOf(text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if m := planLabel.FindStringSubmatch(strings.TrimSpace(first)); m != nil {
		return fmt.Sprintf("plan %s %q", m[1], m[2])
	}
	return ""
}

// revisePrompt answers a Revise click with a ForceReply prompt, whose reply becomes the
// revise action (fromMessage). A decided plan says so instead.
func (c *Channel) revisePrompt(ctx context.Context, q *models.CallbackQuery, m *models.Message, addr core.Address, approval string) {
	rec, ok, err := c.approvals.Load(ctx, approval)
	if err != nil {
		c.log.Error("loading approval record", "chat", m.Chat.ID, "err", err)
	}
	if ok && rec.Decided != "" {
		c.answer(ctx, q.ID, channels.FirstLine(rec.Decided)+"; nothing changed.")
		return
	}
	c.answer(ctx, q.ID, toastRevise)
	label := cmp.Or(labelOf(m.Caption), labelOf(m.Text), "this plan")
	text := fmt.Sprintf("What should change in %s? Reply to this message.", label)
	force := models.ForceReply{ForceReply: true, InputFieldPlaceholder: "What should change?"}
	if m.Chat.Type != models.ChatTypePrivate && q.From.Username != "" {
		// In a group the prompt is for the person who clicked.
		text = "@" + q.From.Username + " " + text
		force.Selective = true
	}
	_, thread, _ := target(addr)
	var sent *models.Message
	err = c.do(ctx, m.Chat.ID, true, "sendMessage", func(ctx context.Context) error {
		var err error
		sent, err = c.b.SendMessage(ctx, &bot.SendMessageParams{
			ChatID: m.Chat.ID, MessageThreadID: thread, Text: text, ReplyMarkup: force,
			ReplyParameters: &models.ReplyParameters{MessageID: m.ID, AllowSendingWithoutReply: true},
		})
		return err
	})
	if err != nil {
		return // logged by do; the text commands still work
	}
	if err := c.st.SetChannelState(ctx, Name, c.account, promptKey(m.Chat.ID, sent.ID), approval); err != nil {
		c.log.Error("saving revise prompt", "chat", m.Chat.ID, "err", err)
	}
}
