package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// sendPlan posts a proposed plan: its file into the thread, then the reply (title, version,
// summary) with the decision buttons. Without its file the plan still reaches the chat,
// buttons and all, and says the file is missing.
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
	head := clip(firstLine(channels.PlainText(r.Text)), 200)
	comment := head + "\n(The full reply is attached: reply.md)"
	f := core.File{Name: "reply.md", MIME: "text/markdown", Data: []byte(r.Text)}
	if uerr := c.upload(ctx, ch, thread, f, comment); uerr != nil {
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

// upload shares f in the thread with Slack's v2 flow (files.getUploadURLExternal, the
// upload, files.completeUploadExternal). A failed attempt is retried as a whole: the
// upload URL is single-use.
func (c *Channel) upload(ctx context.Context, ch, thread string, f core.File, comment string) error {
	data := f.Data
	if data == nil && f.Path != "" {
		var err error
		if data, err = os.ReadFile(f.Path); err != nil {
			return fmt.Errorf("reading attachment: %w", err)
		}
	}
	name := f.Name
	if name == "" && f.Path != "" {
		name = filepath.Base(f.Path)
	}
	if name == "" {
		name = "attachment"
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
type approvalRecord struct {
	Chat    string    `json:"chat"`
	Thread  string    `json:"thread,omitempty"`
	Msgs    []sentMsg `json:"msgs"`
	Decided string    `json:"decided,omitempty"` // the decision, once decided (markdown)
}

// sentMsg is one message with decision buttons, as shown: its sections (mrkdwn) are shown
// again, with the decision under them and the buttons gone.
type sentMsg struct {
	TS       string   `json:"ts"`
	Sections []string `json:"sections,omitempty"`
	Plain    bool     `json:"plain,omitempty"`
}

func approvalKey(id string) string { return "approval:" + id }

func (c *Channel) loadApproval(ctx context.Context, id string) (approvalRecord, bool) {
	r, ok, err := channels.LoadJSON[approvalRecord](ctx, c.st, Name, c.team, approvalKey(id))
	if err != nil {
		c.log.Error("loading approval record", "err", err)
		return approvalRecord{}, false
	}
	return r, ok
}

func (c *Channel) saveApproval(ctx context.Context, id string, r approvalRecord) {
	if err := channels.SaveJSON(ctx, c.st, Name, c.team, approvalKey(id), r); err != nil {
		// The message went out; only retiring its buttons later is at risk.
		c.log.Error("saving approval record", "slack_channel", r.Chat, "err", err)
	}
}

// rememberButtons records message ts as carrying the decision buttons of every approval
// r's buttons name.
func (c *Channel) rememberButtons(ctx context.Context, r core.Reply, ch, thread, ts string, sections []string) {
	seen := map[string]bool{}
	for _, b := range r.Buttons {
		switch b.Action.Kind {
		case core.ActionAccept, core.ActionRevise, core.ActionAuto:
		default:
			continue
		}
		id := b.Action.ApprovalID
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		c.stateMu.Lock()
		rec, ok := c.loadApproval(ctx, id)
		if !ok {
			rec = approvalRecord{Chat: ch, Thread: thread}
		}
		rec.Msgs = append(rec.Msgs, sentMsg{TS: ts, Sections: sections})
		c.saveApproval(ctx, id, rec)
		c.stateMu.Unlock()
	}
}

// retire answers ReplyDecided: every message that carried the decided version's buttons
// is updated to show the decision, without the buttons. The record keeps the decision, so
// a late Revise click can say what happened.
func (c *Channel) retire(ctx context.Context, r core.Reply) (string, error) {
	if r.Ref == "" {
		return "", nil
	}
	c.stateMu.Lock()
	rec, ok := c.loadApproval(ctx, r.Ref)
	if ok {
		rec.Decided = r.Text
		c.saveApproval(ctx, r.Ref, rec)
	}
	c.stateMu.Unlock()
	if !ok {
		return "", nil // no buttons of ours to retire
	}
	decision := channels.SlackMrkdwn(r.Text)
	var errs []error
	for _, m := range rec.Msgs {
		msg := message{sections: m.Sections, plain: m.Plain}
		blocks := append(msg.blocks(), slackgo.NewContextBlock("plangate_decided", mrkdwn(clip(decision, maxSection))))
		if err := c.update(ctx, rec.Chat, m.TS, fallbackOf(r.Text), blocks); err != nil {
			errs = append(errs, fmt.Errorf("retiring the buttons of message %s in %s: %w", m.TS, rec.Chat, err))
		}
	}
	first := ""
	if len(rec.Msgs) > 0 {
		first = rec.Msgs[0].TS
	}
	return first, errors.Join(errs...)
}
