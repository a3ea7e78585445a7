package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// maxContent is Discord's limit on a message's content. Its unit is not documented
// precisely, so chunks are measured in UTF-16 units, never fewer than characters.
const maxContent = 2000

// noMentions is the allowed_mentions of every message the bot sends: "parse": [] lets
// nothing in the text notify anyone, whatever the model wrote.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

var (
	_ channels.Channel       = (*Channel)(nil)
	_ channels.Editor        = (*Channel)(nil)
	_ channels.Typer         = (*Channel)(nil)
	_ channels.Retirer       = (*Channel)(nil)
	_ channels.ApprovalNoter = (*Channel)(nil)
)

// Send implements channels.Channel. The first reply to an interaction answers it
// (interactions.go); the rest is posted to the conversation's channel or thread: text in
// messages of at most 2000 characters (buttons on the last), a plan with its file and
// buttons, a long reply as reply.md. It returns the id of the first message sent.
func (c *Channel) Send(ctx context.Context, r core.Reply) (string, error) {
	ch, err := target(r.To)
	if err != nil {
		return "", fmt.Errorf("sending to discord: %w", err)
	}
	if p := c.claim(r); p != nil {
		if id, ok := c.answerInteraction(ctx, p, r); ok {
			return id, nil
		}
	}
	id, err := c.post(ctx, ch, r)
	if err != nil {
		c.log.Error("a reply could not be delivered", "chat", ch, "kind", r.Kind, "chars", utf8.RuneCountInString(r.Text), "delivered_from", id, "err", err)
		return id, fmt.Errorf("sending to discord channel %s: %w", ch, err)
	}
	return id, nil
}

// post sends r to channel ch as new messages and returns the id of the first.
func (c *Channel) post(ctx context.Context, ch string, r core.Reply) (string, error) {
	rows, dropped := components(r.Buttons)
	if dropped > 0 {
		c.log.Error("left out buttons that discord cannot carry", "chat", ch, "count", dropped)
	}
	files, err := readFiles(r.Attachments)
	if err != nil {
		c.log.Error("an attachment could not be read; sending the text", "chat", ch, "err", err)
	}
	text := r.Text
	if channels.LongReply(c.cfg.LongReplyAsFile, r) {
		files = append(files, &discordgo.File{Name: "reply.md", ContentType: "text/markdown", Reader: strings.NewReader(text)})
		text = channels.Clip(channels.FirstLine(text), 200) + "\n\nThe full reply is attached (reply.md)."
	}
	return c.postChunks(ctx, ch, textChunks(text), rows, files, r)
}

// postChunks sends rendered chunks in order, rows and files on the last, and records the
// message with the buttons (r.Buttons, laid out as rows; r.Steps kept for the Revise modal) under the approvals they carry.
func (c *Channel) postChunks(ctx context.Context, ch string, chunks []string, rows []discordgo.MessageComponent, files []*discordgo.File, r core.Reply) (string, error) {
	approvalIDs := approvals(core.Reply{Buttons: r.Buttons})
	if len(chunks) == 0 && len(files) == 0 {
		if len(rows) == 0 {
			return "", nil // nothing to show
		}
		chunks = []string{"…"}
	}
	if len(chunks) == 0 {
		chunks = []string{""}
	}
	var first string
	for i, chunk := range chunks {
		m := &discordgo.MessageSend{Content: chunk, AllowedMentions: noMentions(), Components: []discordgo.MessageComponent{}}
		last := i == len(chunks)-1
		if last {
			if rows != nil {
				m.Components = rows
			}
			m.Files = files
		}
		sent, err := c.sendMessage(ctx, ch, m)
		if err != nil && last && len(files) > 0 && ctx.Err() == nil {
			// Without its file the text still reaches the chat, buttons and all.
			c.log.Error("sending with the file failed; sending the text alone", "chat", ch, "err", err)
			m.Files = nil
			if m.Content == "" {
				m.Content = "(The attachment could not be sent.)"
			}
			sent, err = c.sendMessage(ctx, ch, m)
		}
		if err != nil {
			if len(chunks) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(chunks), err)
			}
			return first, err
		}
		if first == "" {
			first = sent.ID
		}
		if last && len(rows) > 0 && len(approvalIDs) > 0 {
			c.approvals.Add(ctx, approvalIDs, sentMsg{Channel: ch, ID: sent.ID, Content: m.Content, Buttons: r.Buttons, Steps: r.Steps})
		}
	}
	return first, nil
}

func (c *Channel) sendMessage(ctx context.Context, ch string, m *discordgo.MessageSend) (*discordgo.Message, error) {
	// A file reader is consumed by an attempt; keep the bytes to rebuild it for the next.
	var datas [][]byte
	for _, f := range m.Files {
		b, err := io.ReadAll(f.Reader)
		if err != nil {
			return nil, fmt.Errorf("reading attachment %s: %w", f.Name, err)
		}
		datas = append(datas, b)
	}
	var sent *discordgo.Message
	err := c.do(ctx, "sending a message", func(opts ...discordgo.RequestOption) error {
		for i, f := range m.Files {
			f.Reader = bytes.NewReader(datas[i])
		}
		var err error
		sent, err = c.s.ChannelMessageSendComplex(ch, m, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if sent == nil {
		return nil, errors.New("sending a message: discord answered without the message")
	}
	return sent, nil
}

// readFiles turns attachments into uploads; a plan file is read from its path.
func readFiles(fs []core.File) ([]*discordgo.File, error) {
	var out []*discordgo.File
	var errs []error
	for _, f := range fs {
		data := f.Data
		if data == nil && f.Path != "" {
			var err error
			if data, err = os.ReadFile(f.Path); err != nil {
				errs = append(errs, fmt.Errorf("reading attachment %s: %w", f.Name, err))
				continue
			}
		}
		name := f.Name
		if name == "" {
			name = "attachment"
		}
		mime := f.MIME
		if mime == "" {
			mime = "application/octet-stream"
		}
		out = append(out, &discordgo.File{Name: name, ContentType: mime, Reader: bytes.NewReader(data)})
	}
	return out, errors.Join(errs...)
}

// textChunks renders markdown for Discord and splits it at the content limit; a split
// code block is closed and reopened, so no chunk breaks one.
func textChunks(md string) []string {
	if strings.TrimSpace(md) == "" {
		return nil
	}
	out := channels.DiscordMarkdown(md)
	if strings.TrimSpace(out) == "" {
		out = channels.PlainText(md) // markup that renders to nothing is shown as plain text
	}
	return channels.SplitText(out, maxContent, channels.UTF16Len)
}

// EditsInPlace implements channels.Drafter: replies may be shown as drafts here.
func (c *Channel) EditsInPlace() {}

// Edit implements channels.Editor: the message's content becomes r's, with r's buttons.
// Should the new text need more than one message, the rest follows as new messages.
func (c *Channel) Edit(ctx context.Context, id string, r core.Reply) error {
	ch, err := target(r.To)
	if err != nil {
		return fmt.Errorf("editing discord message: %w", err)
	}
	if id == "" {
		return errors.New("editing discord message: no message id")
	}
	chunks := textChunks(r.Text)
	if len(chunks) == 0 {
		return fmt.Errorf("editing discord message %s: the new text is empty", id)
	}
	rows, _ := components(r.Buttons)
	if rows == nil || len(chunks) > 1 {
		rows = []discordgo.MessageComponent{}
	}
	if err := c.editMessage(ctx, ch, id, chunks[0], rows); err != nil {
		return fmt.Errorf("editing discord message %s in %s: %w", id, ch, err)
	}
	if len(chunks) > 1 {
		rest, _ := components(r.Buttons)
		if _, err := c.postChunks(ctx, ch, chunks[1:], rest, nil, r); err != nil {
			return fmt.Errorf("sending the rest of edited message %s in %s: %w", id, ch, err)
		}
	}
	return nil
}

func (c *Channel) editMessage(ctx context.Context, ch, id, content string, rows []discordgo.MessageComponent) error {
	return c.do(ctx, "editing a message", func(opts ...discordgo.RequestOption) error {
		e := discordgo.NewMessageEdit(ch, id)
		e.Content = &content
		e.Components = &rows
		e.AllowedMentions = noMentions()
		_, err := c.s.ChannelMessageEditComplex(e, opts...)
		return err
	})
}

// Typing implements channels.Typer. It is tried once: a lost indicator is harmless and a
// retry would show it after the reply.
func (c *Channel) Typing(ctx context.Context, a core.Address) error {
	ch, err := target(a)
	if err != nil {
		return fmt.Errorf("typing on discord: %w", err)
	}
	err = c.doWithin(ctx, c.tune.retry.AttemptTime, 1, "typing", func(opts ...discordgo.RequestOption) error {
		return c.s.ChannelTyping(ch, opts...)
	})
	if err != nil {
		return fmt.Errorf("typing in discord channel %s: %w", ch, err)
	}
	return nil
}

// Retire implements channels.Retirer: every message that carried the decided version's
// buttons loses them and shows the decision. The record keeps the decision, so a late
// Revise click can say what happened.
func (c *Channel) Retire(ctx context.Context, r core.Reply) error {
	line := channels.DiscordMarkdown(r.Text)
	err := c.approvals.Retire(ctx, r, func(ctx context.Context, m sentMsg) error {
		content := withDecision(m.Content, line)
		if err := c.editMessage(ctx, m.Channel, m.ID, content, []discordgo.MessageComponent{}); err != nil {
			return fmt.Errorf("retiring the buttons of message %s in %s: %w", m.ID, m.Channel, err)
		}
		return nil
	})
	if err != nil {
		c.log.Error("buttons of a decided plan could not be removed", "err", err)
	}
	return err
}

// NoteApprovals implements channels.ApprovalNoter: every message with the pending
// version's buttons shows the approvals so far under its content and keeps its buttons.
func (c *Channel) NoteApprovals(ctx context.Context, r core.Reply) error {
	rec, ok, err := c.approvals.Load(ctx, r.Ref)
	if err != nil || !ok || rec.Decided != "" {
		return err
	}
	line := channels.DiscordMarkdown(r.Text)
	var errs []error
	for _, m := range rec.Msgs {
		if len(m.Buttons) == 0 {
			continue
		}
		rows, _ := components(m.Buttons)
		if err := c.editMessage(ctx, m.Channel, m.ID, withDecision(m.Content, line), rows); err != nil {
			errs = append(errs, fmt.Errorf("showing approvals on message %s in %s: %w", m.ID, m.Channel, err))
		}
	}
	return errors.Join(errs...)
}

// withDecision appends the decision line to a message's content, shortening the content
// if both would not fit.
func withDecision(content, line string) string {
	line = "\n\n" + channels.Clip(line, 400)
	room := maxContent - channels.UTF16Len(line)
	if channels.UTF16Len(content) > room {
		content = channels.SplitText(content, room-1, channels.UTF16Len)[0] + "…"
	}
	return content + line
}
