package telegram

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// inbound turns an update into work: a message for the handler, or something the adapter
// does itself (answering an invalid button, asking for revise feedback). ok is false for
// updates the bot ignores.
func (c *Channel) inbound(ctx context.Context, u *models.Update) (job, bool) {
	switch {
	case u.Message != nil:
		m, ok := c.fromMessage(ctx, u.ID, u.Message)
		return job{msg: m}, ok
	case u.CallbackQuery != nil:
		return c.fromCallback(ctx, u.ID, u.CallbackQuery)
	}
	return job{}, false
}

// fromMessage normalizes a chat message, or reports false when the bot should not react:
// another chat, another bot's command, or group chatter that does not address the bot.
func (c *Channel) fromMessage(ctx context.Context, updateID int64, m *models.Message) (core.Message, bool) {
	if !c.allowed.Allows(m.Chat.ID) {
		c.log.Debug("ignoring a chat that is not allowed", "chat", m.Chat.ID)
		return core.Message{}, false
	}
	if m.From == nil || m.From.ID == c.botID {
		return core.Message{}, false // channel posts, anonymous senders, ourselves
	}
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	direct := m.Chat.Type == models.ChatTypePrivate
	p := c.parseText(text, ents)
	if p.otherBot {
		c.log.Debug("ignoring a command for another bot", "chat", m.Chat.ID)
		return core.Message{}, false
	}
	rt := m.ReplyToMessage
	if rt != nil && rt.ForumTopicCreated != nil {
		rt = nil // in a forum every message "replies" to its topic's first message
	}
	replyToBot := rt != nil && rt.From != nil && rt.From.ID == c.botID
	addressed := direct || p.planCommand || p.addressed || p.mentioned || replyToBot
	if !direct && c.cfg.RequireMentionInGroups && !addressed {
		return core.Message{}, false
	}
	msg := core.Message{
		ID:        strconv.FormatInt(updateID, 10),
		Address:   c.address(m),
		Sender:    person(m.From),
		Text:      p.text,
		Direct:    direct,
		Mentioned: addressed,
		Time:      time.Unix(int64(m.Date), 0),
	}
	if rt != nil {
		msg.ReplyTo = strconv.Itoa(rt.ID)
	}
	if c.isPlanEdit(m, rt, p.text) {
		msg.Text = channels.EditCommand(p.text, c.username)
		msg.Mentioned = true
		msg.Attachments = []core.File{c.editedFile(ctx, m)}
		return msg, true
	}
	if replyToBot && !p.planCommand {
		// A reply to a "What should change?" prompt is the feedback of a Revise click.
		if approval, ok := c.promptApproval(ctx, m.Chat.ID, rt.ID); ok {
			msg.Action = &core.Action{Kind: core.ActionRevise, ApprovalID: approval, Value: strings.TrimSpace(p.text)}
		}
	}
	return msg, true
}

func person(u *models.User) core.Person {
	id := strconv.FormatInt(u.ID, 10)
	name := u.Username
	if name == "" {
		name = cmp.Or(strings.TrimSpace(u.FirstName+" "+u.LastName), id)
	}
	return core.Person{ID: id, Name: name, IsBot: u.IsBot}
}

// parsed is what the entities of a message say about whom it addresses.
type parsed struct {
	text        string // without a leading "@ThisBot" and the "@ThisBot" of a leading command
	planCommand bool   // starts with /plan or /plan@ThisBot
	addressed   bool   // starts with any /command@ThisBot
	otherBot    bool   // starts with a /command@OtherBot
	mentioned   bool   // @ThisBot appears, or a text mention of the bot's user
}

// parseText reads the bot_command and mention entities of a message, whose offsets count
// UTF-16 units. Without entities (some clients, forwarded text) a leading command is
// recognised from the text itself.
func (c *Channel) parseText(text string, ents []models.MessageEntity) parsed {
	var p parsed
	u := utf16.Encode([]rune(text))

	// A leading "@ThisBot" is dropped, so "@bot /plan status" is the command it looks like.
	for _, e := range ents {
		if e.Offset == 0 && c.isBot(u, e) {
			p.mentioned = true
			n := e.Length
			for n < len(u) && u[n] < utf8.RuneSelf && unicode.IsSpace(rune(u[n])) {
				n++
			}
			u = u[n:]
			ents = shiftEntities(ents, n)
			break
		}
	}

	cmdLen := 0
	for _, e := range ents {
		if e.Type == models.MessageEntityTypeBotCommand && e.Offset == 0 && e.Length <= len(u) {
			cmdLen = e.Length
		}
	}
	if cmdLen == 0 && len(ents) == 0 && len(u) > 0 && u[0] == '/' {
		cmdLen = len(utf16.Encode([]rune(firstWord(string(utf16.Decode(u))))))
	}
	if cmdLen > 0 {
		name, to, _ := strings.Cut(string(utf16.Decode(u[:cmdLen])), "@")
		if to != "" && !strings.EqualFold(to, c.username) {
			p.otherBot = true
			return p
		}
		p.planCommand = strings.EqualFold(name, "/plan")
		if to != "" {
			// "/plan@ThisBot on x" is handed on as "/plan on x".
			p.addressed = true
			u = append(utf16.Encode([]rune(name)), u[cmdLen:]...)
			ents = shiftEntities(ents, cmdLen-len(utf16.Encode([]rune(name))))
		}
	}
	for _, e := range ents {
		if c.isBot(u, e) {
			p.mentioned = true
		}
	}
	p.text = string(utf16.Decode(u))
	return p
}

// isBot reports whether entity e of the UTF-16 text u names this bot.
func (c *Channel) isBot(u []uint16, e models.MessageEntity) bool {
	switch e.Type {
	case models.MessageEntityTypeMention:
		if c.username == "" || e.Offset < 0 || e.Length < 0 || e.Offset+e.Length > len(u) {
			return false
		}
		return strings.EqualFold(string(utf16.Decode(u[e.Offset:e.Offset+e.Length])), "@"+c.username)
	case models.MessageEntityTypeTextMention:
		return e.User != nil && e.User.ID == c.botID
	}
	return false
}

// shiftEntities moves entities left by n UTF-16 units, dropping those that started in the
// removed part.
func shiftEntities(ents []models.MessageEntity, n int) []models.MessageEntity {
	out := make([]models.MessageEntity, 0, len(ents))
	for _, e := range ents {
		if e.Offset >= n {
			e.Offset -= n
			out = append(out, e)
		}
	}
	return out
}

func firstWord(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i]
	}
	return s
}
