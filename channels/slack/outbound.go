package slack

import (
	"context"
	"fmt"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Slack's limits. Lengths are measured in UTF-16 units, which is never less than the
// characters Slack counts.
const (
	maxSection  = 3000   // text of one section block
	maxBlocks   = 50     // blocks in one message
	maxMessage  = 40_000 // text of one message, all its blocks together
	maxLabel    = 75     // text of a button
	maxFallback = 300    // the notification text of a message with blocks (our choice)
)

var (
	_ channels.Channel       = (*Channel)(nil)
	_ channels.Editor        = (*Channel)(nil)
	_ channels.Retirer       = (*Channel)(nil)
	_ channels.ApprovalNoter = (*Channel)(nil)
)

// Send implements channels.Channel. Text goes as mrkdwn in section blocks within Slack's
// limits (buttons on the last message); a plan as a file in the thread and a message with
// its buttons. A notice that first answers a click or a slash command is shown only to its
// author. It returns the ts of the first message posted.
func (c *Channel) Send(ctx context.Context, r core.Reply) (string, error) {
	who, answers := c.waiting.take(r.InReplyTo)
	if answers && r.Kind == core.ReplyNotice && len(r.Buttons) == 0 && len(r.Attachments) == 0 {
		err := c.ephemeral(ctx, who.ch, who.thread, who.user, r.Text)
		if err == nil || ctx.Err() != nil {
			return "", err
		}
		c.log.Warn("an ephemeral answer failed; posting it in the thread", "slack_channel", who.ch, "err", err)
	}
	ch, thread, err := target(r.To)
	if err != nil {
		return "", fmt.Errorf("sending to slack: %w", err)
	}
	buttons := c.buttonBlocks(r.Buttons)
	var first, withButtons string
	var shown []string
	switch {
	case r.Kind == core.ReplyPlan && len(r.Attachments) > 0:
		first, withButtons, shown, err = c.sendPlan(ctx, ch, thread, r, buttons)
	case channels.LongReply(c.cfg.LongReplyAsFile, r):
		first, withButtons, shown, err = c.sendLong(ctx, ch, thread, r, buttons)
	default:
		first, withButtons, shown, err = c.sendText(ctx, ch, thread, r.Text, buttons)
		for _, f := range r.Attachments {
			if err != nil {
				break
			}
			err = c.upload(ctx, ch, thread, f, "")
		}
	}
	if withButtons != "" && len(buttons) > 0 {
		c.approvals.Add(ctx, channels.ApprovalIDs(r), sentMsg{Chat: ch, TS: withButtons, Sections: shown, Buttons: r.Buttons, Steps: r.Steps})
	}
	if err != nil {
		return first, fmt.Errorf("sending to slack channel %s: %w", ch, err)
	}
	return first, nil
}

// message is one Slack message to post: section texts and, on the last, the buttons.
type message struct {
	fallback string
	sections []string
	extra    []slackgo.Block
	plain    bool // sections are plain_text (the fallback when Slack refuses the mrkdwn)
}

func (m message) blocks() []slackgo.Block {
	out := make([]slackgo.Block, 0, len(m.sections)+len(m.extra))
	for _, s := range m.sections {
		t := mrkdwn(s)
		if m.plain {
			t = plain(s)
		}
		out = append(out, slackgo.NewSectionBlock(t, nil, nil))
	}
	return append(out, m.extra...)
}

// layout converts markdown to mrkdwn and lays it out in messages within Slack's limits,
// extra (the buttons) at the end of the last.
func layout(md string, extra []slackgo.Block) []message {
	text := channels.SlackMrkdwn(md)
	if strings.TrimSpace(text) == "" && strings.TrimSpace(md) != "" {
		text = escapeMrkdwn(md) // markdown that renders to nothing is shown as written
	}
	return group(channels.SplitText(text, maxSection, channels.UTF16Len), extra, false, fallbackOf(md))
}

// group packs sections into messages of at most maxBlocks blocks and maxMessage
// characters, keeping room for extra on every message so it fits on the last.
func group(sections []string, extra []slackgo.Block, plainText bool, fallback string) []message {
	if len(sections) == 0 {
		if len(extra) == 0 {
			return nil // nothing to show
		}
		sections = []string{"…"}
	}
	room := maxBlocks - len(extra)
	var out []message
	cur := message{plain: plainText}
	size := 0
	for _, s := range sections {
		n := channels.UTF16Len(s)
		if len(cur.sections) > 0 && (len(cur.sections) >= room || size+n > maxMessage) {
			out = append(out, cur)
			cur = message{plain: plainText}
			size = 0
		}
		cur.sections = append(cur.sections, s)
		size += n
	}
	out = append(out, cur)
	for i := range out {
		out[i].fallback = fallback
		if i > 0 {
			out[i].fallback = "(continued) " + fallback
		}
	}
	out[len(out)-1].extra = extra
	return out
}

// fallbackOf is the notification text of a reply: its first line, escaped and short.
func fallbackOf(md string) string {
	return escapeMrkdwn(channels.Clip(firstLine(channels.PlainText(md)), maxFallback))
}

// sendText posts markdown as messages, buttons on the last. It returns the ts of the first
// and of the last message, and the sections of the last.
func (c *Channel) sendText(ctx context.Context, ch, thread, md string, buttons []slackgo.Block) (first, last string, shown []string, err error) {
	msgs := layout(md, buttons)
	for i, m := range msgs {
		ts, err := c.postMessage(ctx, ch, thread, m)
		if err != nil {
			if len(msgs) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(msgs), err)
			}
			return first, last, shown, err
		}
		if i == 0 {
			first = ts
		}
		last, shown = ts, m.sections
	}
	return first, last, shown, nil
}

// postMessage posts one message. If Slack refuses its blocks, it is posted again as plain
// text: a reply is never dropped for its formatting.
func (c *Channel) postMessage(ctx context.Context, ch, thread string, m message) (string, error) {
	ts, err := c.post(ctx, ch, thread, m.fallback, m.blocks())
	if err == nil || m.plain || !isFormatRefusal(err) {
		return ts, err
	}
	c.log.Warn("slack refused the formatting; sending plain text", "slack_channel", ch, "err", err)
	return c.post(ctx, ch, thread, m.fallback, m.plainBlocks())
}

// plainBlocks are m's blocks with its mrkdwn sections as plain text, each within the limit.
func (m message) plainBlocks() []slackgo.Block {
	var sections []string
	for _, s := range m.sections {
		sections = append(sections, channels.SplitText(unescape(s), maxSection, channels.UTF16Len)...)
	}
	if len(sections) > maxBlocks-1 {
		sections = sections[:maxBlocks-1]
	}
	return message{sections: sections, extra: m.extra, plain: true}.blocks()
}

// post is chat.postMessage in thread ("" = top level).
func (c *Channel) post(ctx context.Context, ch, thread, fallback string, blocks []slackgo.Block) (string, error) {
	opts := []slackgo.MsgOption{
		slackgo.MsgOptionText(fallback, false),
		slackgo.MsgOptionBlocks(blocks...),
		slackgo.MsgOptionDisableLinkUnfurl(),
	}
	if thread != "" {
		opts = append(opts, slackgo.MsgOptionTS(thread))
	}
	var ts string
	err := c.do(ctx, ch, true, "chat.postMessage", func(ctx context.Context) error {
		var err error
		_, ts, err = c.api.PostMessageContext(ctx, ch, opts...)
		return err
	})
	return ts, err
}

// update is chat.update of message ts.
func (c *Channel) update(ctx context.Context, ch, ts, fallback string, blocks []slackgo.Block) error {
	return c.do(ctx, ch, true, "chat.update", func(ctx context.Context) error {
		_, _, _, err := c.api.UpdateMessageContext(ctx, ch, ts, slackgo.MsgOptionText(fallback, false), slackgo.MsgOptionBlocks(blocks...))
		return err
	})
}

// EditsInPlace implements channels.Drafter: replies may be shown as drafts here.
func (c *Channel) EditsInPlace() {}

// Edit implements channels.Editor: the message's text becomes r's (chat.update). Should
// the new text need more than one message, the rest follows as new messages.
func (c *Channel) Edit(ctx context.Context, id string, r core.Reply) error {
	ch, thread, err := target(r.To)
	if err != nil {
		return fmt.Errorf("editing slack message: %w", err)
	}
	if id == "" {
		return fmt.Errorf("editing slack message: no message ts")
	}
	msgs := layout(r.Text, c.buttonBlocks(r.Buttons))
	if len(msgs) == 0 {
		return fmt.Errorf("editing slack message %s: the new text is empty", id)
	}
	m := msgs[0]
	err = c.update(ctx, ch, id, m.fallback, m.blocks())
	if isFormatRefusal(err) {
		c.log.Warn("slack refused the formatting of an edit; using plain text", "slack_channel", ch, "err", err)
		err = c.update(ctx, ch, id, m.fallback, m.plainBlocks())
	}
	if err != nil {
		return fmt.Errorf("editing slack message %s in %s: %w", id, ch, err)
	}
	for i, m := range msgs[1:] {
		if _, err := c.postMessage(ctx, ch, thread, m); err != nil {
			return fmt.Errorf("sending part %d of edited message %s in %s: %w", i+2, id, ch, err)
		}
	}
	return nil
}

// ephemeral shows md to user only, in ch (and thread, "" = top level).
func (c *Channel) ephemeral(ctx context.Context, ch, thread, user, md string) error {
	text := channels.SlackMrkdwn(md)
	if strings.TrimSpace(text) == "" {
		text = escapeMrkdwn(md)
	}
	opts := []slackgo.MsgOption{slackgo.MsgOptionText(channels.Clip(text, maxMessage/2), false)}
	if thread != "" {
		opts = append(opts, slackgo.MsgOptionTS(thread))
	}
	return c.do(ctx, ch, true, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := c.api.PostEphemeralContext(ctx, ch, user, opts...)
		return err
	})
}

// buttonBlocks lays out buttons: the decisions in one actions block, the answer options in
// another. A button plangate cannot encode is left out and logged: the reply text always
// names the /plan command that does the same.
func (c *Channel) buttonBlocks(bs []core.Button) []slackgo.Block {
	var decide, answers []slackgo.BlockElement
	for option, b := range channels.Numbered(bs) {
		id, value, ok := buttonValue(b.Action, option)
		if !ok {
			c.log.Error("leaving out a button plangate cannot encode", "label", b.Label, "kind", b.Action.Kind)
			continue
		}
		btn := slackgo.NewButtonBlockElement(id, value, plain(channels.Clip(channels.ButtonLabel(b), maxLabel)))
		if b.Action.Kind == core.ActionAnswer {
			answers = append(answers, btn)
			continue
		}
		if b.Action.Kind == core.ActionAccept {
			btn = btn.WithStyle(slackgo.StylePrimary)
		}
		decide = append(decide, btn)
	}
	var out []slackgo.Block
	if len(decide) > 0 {
		out = append(out, slackgo.NewActionBlock(decideBlock, decide...))
	}
	if len(answers) > 0 {
		out = append(out, slackgo.NewActionBlock(answersBlock, answers...))
	}
	return out
}

func mrkdwn(s string) *slackgo.TextBlockObject {
	// verbatim: Slack must not turn words into links or mentions on its own.
	return &slackgo.TextBlockObject{Type: slackgo.MarkdownType, Text: s, Verbatim: true}
}

func plain(s string) *slackgo.TextBlockObject {
	return &slackgo.TextBlockObject{Type: slackgo.PlainTextType, Text: s}
}

// escapeMrkdwn escapes text for mrkdwn, where &, < and > are markup.
func escapeMrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// quoteMrkdwn escapes text and shows it as a quote.
func quoteMrkdwn(s string) string {
	lines := strings.Split(escapeMrkdwn(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
