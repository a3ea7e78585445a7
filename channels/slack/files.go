package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// sendPlan posts a proposed plan: its file, then the reply with the decision buttons, which
// says so when the file could not be uploaded.
func (c *Channel) sendPlan(ctx context.Context, ch, thread string, r core.Reply, buttons []slackgo.Block) (first, withButtons string, shown []string, err error) {
	text := r.Text
	if uerr := c.upload(ctx, ch, thread, r.Attachments[0], ""); uerr != nil {
		if ctx.Err() != nil {
			return "", "", nil, uerr
		}
		c.log.Error("uploading the plan file failed; posting the plan without it", "slack_channel", ch, "err", uerr)
		text += "\n\n_The plan file could not be uploaded; /plan show tries again._"
	}
	first, withButtons, shown, err = c.sendText(ctx, ch, thread, text, buttons)
	if err != nil {
		return first, withButtons, shown, err
	}
	for _, f := range r.Attachments[1:] {
		if err := c.upload(ctx, ch, thread, f, ""); err != nil {
			return first, withButtons, shown, err
		}
	}
	return first, withButtons, shown, nil
}

// sendLong sends a reply too long for chat reading as reply.md, its first line as the
// comment; buttons, if any, follow in a short message. If the upload fails the reply goes
// as messages after all.
func (c *Channel) sendLong(ctx context.Context, ch, thread string, r core.Reply, buttons []slackgo.Block) (first, withButtons string, shown []string, err error) {
	head := channels.Clip(firstLine(channels.PlainText(r.Text)), 200)
	comment := head + "\n(The full reply is attached: reply.md)"
	if uerr := c.upload(ctx, ch, thread, channels.ReplyFile(r.Text), comment); uerr != nil {
		if ctx.Err() != nil {
			return "", "", nil, uerr
		}
		c.log.Error("uploading a long reply failed; sending it as messages", "slack_channel", ch, "err", uerr)
		return c.sendText(ctx, ch, thread, r.Text, buttons)
	}
	if len(buttons) == 0 {
		return "", "", nil, nil
	}
	return c.sendText(ctx, ch, thread, head, buttons)
}

// upload shares f in the thread with Slack's v2 flow; a failed attempt is retried as a
// whole, as the upload URL is single-use.
func (c *Channel) upload(ctx context.Context, ch, thread string, f core.File, comment string) error {
	name, data, err := channels.Attachment(f)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		// Slack refuses empty files; say so instead of losing the attachment silently.
		_, err := c.post(ctx, ch, thread, escapeMrkdwn(name)+" is empty.", []slackgo.Block{
			slackgo.NewSectionBlock(mrkdwn("_"+escapeMrkdwn(name)+" is empty._"), nil, nil)})
		return err
	}
	return c.do(ctx, ch, true, "files.upload", func(ctx context.Context) error {
		_, err := c.api.UploadFileContext(ctx, slackgo.UploadFileParameters{
			Channel:         ch,
			ThreadTimestamp: thread,
			Filename:        name,
			Title:           name,
			Reader:          bytes.NewReader(data),
			FileSize:        len(data),
			InitialComment:  comment,
		})
		return err
	})
}

// approvalRecord remembers the messages that carry one plan version's buttons, so that
// the engine's ReplyDecided (which names only the approval id) can retire them.
type approvalRecord = channels.Approval[sentMsg]

// sentMsg is one message with decision buttons, as shown: its sections (mrkdwn) are shown
// again, with the decision under them and the buttons gone.
type sentMsg struct {
	Chat     string   `json:"chat"`
	TS       string   `json:"ts"`
	Sections []string `json:"sections,omitempty"`
	Plain    bool     `json:"plain,omitempty"`
	// Buttons are the message's buttons, so a counted approval can show its progress and
	// keep them (NoteApprovals); records from before they were kept have none.
	Buttons []core.Button `json:"buttons,omitempty"`
	// Steps are the pending version's step texts, which the Revise modal offers to comment
	// on; records from before they were kept have none (the modal then has no selector).
	Steps []string `json:"steps,omitempty"`
}

// UpgradeChat implements channels.ChatUpgrader for records that kept the channel once.
func (m *sentMsg) UpgradeChat(chat json.RawMessage) {
	if m.Chat == "" {
		_ = json.Unmarshal(chat, &m.Chat)
	}
}

// loadApproval returns the record of an approval; a record that cannot be read is logged
// and counts as none.
func (c *Channel) loadApproval(ctx context.Context, id string) (approvalRecord, bool) {
	r, ok, err := c.approvals.Load(ctx, id)
	if err != nil {
		c.log.Error("loading approval record", "err", err)
		return approvalRecord{}, false
	}
	return r, ok
}

// Retire implements channels.Retirer: every message that carried the decided version's
// buttons is updated to show the decision, without the buttons. The record keeps the
// decision, so a late Revise click can say what happened.
func (c *Channel) Retire(ctx context.Context, r core.Reply) error {
	c.waiting.take(r.InReplyTo) // a decision is not the answer a click waits for
	decision := channels.SlackMrkdwn(r.Text)
	return c.approvals.Retire(ctx, r, func(ctx context.Context, m sentMsg) error {
		msg := message{sections: m.Sections, plain: m.Plain}
		blocks := append(msg.blocks(), slackgo.NewContextBlock("plangate_decided", mrkdwn(channels.Clip(decision, maxSection))))
		if err := c.update(ctx, m.Chat, m.TS, fallbackOf(r.Text), blocks); err != nil {
			return fmt.Errorf("retiring the buttons of message %s in %s: %w", m.TS, m.Chat, err)
		}
		return nil
	})
}

// NoteApprovals implements channels.ApprovalNoter: every message with the pending
// version's buttons shows the approvals so far under its text and keeps its buttons. A
// version decided meanwhile, or a record without its buttons, is left alone.
func (c *Channel) NoteApprovals(ctx context.Context, r core.Reply) error {
	rec, ok := c.loadApproval(ctx, r.Ref)
	if !ok || rec.Decided != "" {
		return nil
	}
	note := channels.SlackMrkdwn(r.Text)
	var errs []error
	for _, m := range rec.Msgs {
		if len(m.Buttons) == 0 {
			continue
		}
		msg := message{sections: m.Sections, plain: m.Plain}
		blocks := append(msg.blocks(), slackgo.NewContextBlock("plangate_approvals", mrkdwn(channels.Clip(note, maxSection))))
		blocks = append(blocks, c.buttonBlocks(m.Buttons)...)
		if err := c.update(ctx, m.Chat, m.TS, fallbackOf(r.Text), blocks); err != nil {
			errs = append(errs, fmt.Errorf("showing approvals on message %s in %s: %w", m.TS, m.Chat, err))
		}
	}
	return errors.Join(errs...)
}
