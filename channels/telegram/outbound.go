package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Telegram's limits, in UTF-16 units.
const (
	maxText    = 4096
	maxCaption = 1024
	maxLabel   = 64 // button labels: longer ones are cut (Telegram shows little of them anyway)
)

// inlineKeyboard is reply_markup with callback buttons only. The library's button type
// always encodes an empty copy_text object, which is not what a callback button is.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// noKeyboard removes the buttons of a message.
var noKeyboard = inlineKeyboard{InlineKeyboard: [][]inlineButton{}}

var (
	_ channels.Channel       = (*Channel)(nil)
	_ channels.Editor        = (*Channel)(nil)
	_ channels.Typer         = (*Channel)(nil)
	_ channels.Retirer       = (*Channel)(nil)
	_ channels.ApprovalNoter = (*Channel)(nil)
)

// Send implements channels.Channel: text as Telegram HTML in messages of at most 4096
// units (buttons on the last), a plan as a document with its buttons. It returns the id
// of the first message sent.
func (c *Channel) Send(ctx context.Context, r core.Reply) (string, error) {
	c.toasts.observe(r)
	chat, thread, err := target(r.To)
	if err != nil {
		return "", fmt.Errorf("sending to telegram: %w", err)
	}
	kb := c.keyboard(r.Buttons)
	var first, withButtons int
	var caption string
	switch {
	case r.Kind == core.ReplyPlan && len(r.Attachments) > 0:
		first, withButtons, caption, err = c.sendPlan(ctx, chat, thread, r, kb)
	case channels.LongReply(c.cfg.LongReplyAsFile, r):
		first, err = c.sendLong(ctx, chat, thread, r, kb)
		withButtons = first
	default:
		first, withButtons, err = c.sendChunks(ctx, chat, thread, htmlChunks(r.Text), kb)
		for _, f := range r.Attachments {
			if err != nil {
				break
			}
			var id int
			id, err = c.sendDocument(ctx, chat, thread, f, "", nil)
			if first == 0 {
				first = id
			}
		}
	}
	if first != 0 && withButtons != 0 && kb != nil {
		c.rememberSent(ctx, r, chat, withButtons, caption)
	}
	if err != nil {
		return idString(first), fmt.Errorf("sending to telegram chat %d: %w", chat, err)
	}
	return idString(first), nil
}

func idString(id int) string {
	if id == 0 {
		return ""
	}
	return strconv.Itoa(id)
}

// rememberSent records which message carries the buttons of r, for ReplyDecided and for
// telling a stale question's buttons from the open one's.
func (c *Channel) rememberSent(ctx context.Context, r core.Reply, chat int64, msgID int, caption string) {
	c.approvals.Add(ctx, channels.ApprovalIDs(r), sentMsg{Chat: chat, ID: msgID, Doc: caption != "", Caption: caption, Buttons: r.Buttons})
	for _, b := range r.Buttons {
		if b.Action.Kind == core.ActionAnswer {
			c.setQuestionMsgs(ctx, r.To.SessionID(), msgID, r.Kind == core.ReplyNudge)
			return
		}
	}
}

// keyboard lays out buttons: decisions on one row, answer options one per row. A button
// whose callback_data would not fit 64 bytes is left out and logged: the reply text always
// names the /plan command that does the same.
func (c *Channel) keyboard(bs []core.Button) models.ReplyMarkup {
	var decisions []inlineButton
	var rows [][]inlineButton
	for option, b := range channels.Numbered(bs) {
		data, ok := callbackData(b.Action, option)
		if !ok {
			c.log.Error("leaving out a button that does not fit telegram's callback data", "label", b.Label, "kind", b.Action.Kind)
			continue
		}
		btn := inlineButton{Text: clip(channels.ButtonLabel(b), maxLabel), CallbackData: data}
		if b.Action.Kind == core.ActionAnswer {
			rows = append(rows, []inlineButton{btn})
		} else {
			decisions = append(decisions, btn)
		}
	}
	if len(decisions) > 0 {
		rows = append([][]inlineButton{decisions}, rows...)
	}
	if len(rows) == 0 {
		return nil // an untyped nil, so the field is left out of the request
	}
	return inlineKeyboard{InlineKeyboard: rows}
}

// sendChunks sends HTML chunks in order, kb on the last. It returns the ids of the first
// and the last message.
func (c *Channel) sendChunks(ctx context.Context, chat int64, thread int, chunks []string, kb models.ReplyMarkup) (first, last int, err error) {
	if len(chunks) == 0 {
		if kb == nil {
			return 0, 0, nil // nothing to show
		}
		chunks = []string{"…"}
	}
	for i, chunk := range chunks {
		var markup models.ReplyMarkup
		if i == len(chunks)-1 {
			markup = kb
		}
		id, err := c.sendChunk(ctx, chat, thread, chunk, markup)
		if err != nil {
			if len(chunks) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(chunks), err)
			}
			return first, last, err
		}
		if i == 0 {
			first = id
		}
		last = id
	}
	return first, last, nil
}

// htmlChunks converts markdown to Telegram HTML split at the text limit. Markdown that
// renders to nothing visible is sent escaped.
func htmlChunks(md string) []string {
	if strings.TrimSpace(md) == "" {
		return nil
	}
	h := channels.TelegramHTML(md)
	if strings.TrimSpace(htmlToPlain(h)) == "" {
		h = html.EscapeString(md)
	}
	return channels.SplitHTML(h, maxText)
}

// sendChunk sends one HTML chunk. If Telegram cannot parse its entities the chunk is sent
// again as plain text: a reply is never dropped for its formatting.
func (c *Channel) sendChunk(ctx context.Context, chat int64, thread int, chunk string, markup models.ReplyMarkup) (int, error) {
	id, err := c.sendMessage(ctx, chat, thread, chunk, models.ParseModeHTML, markup)
	if err == nil || !isEntityError(err) {
		return id, err
	}
	c.log.Warn("telegram rejected the formatting; sending plain text", "chat", chat, "err", err)
	parts := channels.SplitText(htmlToPlain(chunk), maxText, channels.UTF16Len)
	first := 0
	for i, p := range parts {
		var m models.ReplyMarkup
		if i == len(parts)-1 {
			m = markup
		}
		id, err := c.sendMessage(ctx, chat, thread, p, "", m)
		if err != nil {
			return first, err
		}
		if i == 0 {
			first = id
		}
	}
	return first, nil
}

func (c *Channel) sendMessage(ctx context.Context, chat int64, thread int, text string, mode models.ParseMode, markup models.ReplyMarkup) (int, error) {
	var sent *models.Message
	err := c.do(ctx, chat, true, "sendMessage", func(ctx context.Context) error {
		var err error
		sent, err = c.b.SendMessage(ctx, &bot.SendMessageParams{
			ChatID: chat, MessageThreadID: thread, Text: text, ParseMode: mode, ReplyMarkup: markup,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return sent.ID, nil
}

// EditsInPlace implements channels.Drafter: replies may be shown as drafts here.
func (c *Channel) EditsInPlace() {}

// Edit implements channels.Editor: the message's text becomes r's. An edit that changes
// nothing succeeds. Should the new text need more than one message, the rest follows as
// new messages.
func (c *Channel) Edit(ctx context.Context, id string, r core.Reply) error {
	msgID, err := strconv.Atoi(id)
	if err != nil || msgID <= 0 {
		return fmt.Errorf("editing telegram message %q: not a message id", id)
	}
	chat, thread, err := target(r.To)
	if err != nil {
		return fmt.Errorf("editing telegram message: %w", err)
	}
	chunks := htmlChunks(r.Text)
	if len(chunks) == 0 {
		return fmt.Errorf("editing telegram message %d: the new text is empty", msgID)
	}
	kb := c.keyboard(r.Buttons)
	var markup models.ReplyMarkup
	if len(chunks) == 1 {
		markup = kb
	}
	if err := c.editText(ctx, chat, msgID, chunks[0], markup); err != nil {
		return fmt.Errorf("editing telegram message %d in chat %d: %w", msgID, chat, err)
	}
	if len(chunks) > 1 {
		if _, _, err := c.sendChunks(ctx, chat, thread, chunks[1:], kb); err != nil {
			return fmt.Errorf("sending the rest of edited message %d in chat %d: %w", msgID, chat, err)
		}
	}
	return nil
}

func (c *Channel) editText(ctx context.Context, chat int64, msgID int, chunk string, markup models.ReplyMarkup) error {
	edit := func(text string, mode models.ParseMode) error {
		return c.do(ctx, chat, true, "editMessageText", func(ctx context.Context) error {
			_, err := c.b.EditMessageText(ctx, &bot.EditMessageTextParams{
				ChatID: chat, MessageID: msgID, Text: text, ParseMode: mode, ReplyMarkup: markup,
				LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
			})
			return err
		})
	}
	err := edit(chunk, models.ParseModeHTML)
	if isEntityError(err) {
		c.log.Warn("telegram rejected the formatting of an edit; using plain text", "chat", chat, "err", err)
		err = edit(htmlToPlain(chunk), "")
	}
	if isNotModified(err) {
		return nil
	}
	return err
}

// Typing implements channels.Typer. It is tried once: a lost indicator is harmless and a
// retry would show it after the reply.
func (c *Channel) Typing(ctx context.Context, a core.Address) error {
	chat, thread, err := target(a)
	if err != nil {
		return fmt.Errorf("typing on telegram: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, c.tune.retry.AttemptTime)
	defer cancel()
	_, err = c.b.SendChatAction(actx, &bot.SendChatActionParams{ChatID: chat, MessageThreadID: thread, Action: models.ChatActionTyping})
	if err != nil {
		return fmt.Errorf("typing in telegram chat %d: %w", chat, c.scrub(err))
	}
	return nil
}

// Retire implements channels.Retirer: every message that carried the decided version's
// buttons loses them, and a plan document's caption gains the decision line.
func (c *Channel) Retire(ctx context.Context, r core.Reply) error {
	c.toasts.observe(r)
	line := channels.FirstLine(r.Text)
	return c.approvals.Retire(ctx, r, func(ctx context.Context, m sentMsg) error {
		var err error
		if m.Doc {
			err = c.editCaption(ctx, m, line, noKeyboard)
		} else {
			err = c.do(ctx, m.Chat, true, "editMessageReplyMarkup", func(ctx context.Context) error {
				_, err := c.b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: m.Chat, MessageID: m.ID, ReplyMarkup: noKeyboard})
				return err
			})
		}
		if err != nil && !isNotModified(err) {
			return fmt.Errorf("retiring the buttons of message %d in chat %d: %w", m.ID, m.Chat, err)
		}
		return nil
	})
}

// NoteApprovals implements channels.ApprovalNoter: a plan document with the pending
// version's buttons shows the approvals so far under its caption; nudges are left alone.
func (c *Channel) NoteApprovals(ctx context.Context, r core.Reply) error {
	rec, ok, err := c.approvals.Load(ctx, r.Ref)
	if err != nil || !ok || rec.Decided != "" {
		return err
	}
	line := channels.FirstLine(r.Text)
	var errs []error
	for _, m := range rec.Msgs {
		if !m.Doc || len(m.Buttons) == 0 {
			continue
		}
		if err := c.editCaption(ctx, m, line, c.keyboard(m.Buttons)); err != nil && !isNotModified(err) {
			errs = append(errs, fmt.Errorf("showing approvals on message %d in chat %d: %w", m.ID, m.Chat, err))
		}
	}
	return errors.Join(errs...)
}

// editCaption shows line under the caption of plan document m, with markup.
func (c *Channel) editCaption(ctx context.Context, m sentMsg, line string, markup models.ReplyMarkup) error {
	caption, _, _ := buildCaption(strings.Split(m.Caption, "\n"), line)
	return c.do(ctx, m.Chat, true, "editMessageCaption", func(ctx context.Context) error {
		_, err := c.b.EditMessageCaption(ctx, &bot.EditMessageCaptionParams{
			ChatID: m.Chat, MessageID: m.ID, Caption: caption, ParseMode: models.ParseModeHTML, ReplyMarkup: markup,
		})
		return err
	})
}
