package discord

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Answers the adapter gives itself, always ephemeral.
const (
	replyInvalid    = "This button is not one plangate can use; nothing changed."
	replyNotAllowed = "plangate does not answer in this channel."
	replyUnknownCmd = "plangate only knows /plan; nothing changed."
)

// ixKind is how an interaction was acknowledged, which decides how its outcome is shown.
type ixKind string

const (
	// ixCommand: /plan, acknowledged with a deferred message; the outcome edits it.
	ixCommand ixKind = "command"
	// ixComponent: a button or the Revise modal, acknowledged without a message; the
	// outcome is a follow-up (ephemeral for a refusal).
	ixComponent ixKind = "component"
)

// pendingIx is an interaction the engine is handling.
type pendingIx struct {
	ix    *discordgo.Interaction
	kind  ixKind
	acked chan struct{} // closed once the callback was answered (or failed: ackErr)

	ackErr   error
	replayed bool // acknowledged before a restart: its outcome follows the saved token up
	mu       sync.Mutex
	used     bool // a reply went to it
}

// ixJob is what an interaction asks for: a message for the engine, acknowledged with ack,
// or an answer the adapter gives itself (local), with no message.
type ixJob struct {
	msg   core.Message
	ack   *discordgo.InteractionResponse
	kind  ixKind
	local *discordgo.InteractionResponse
}

// fromInteraction classifies an INTERACTION_CREATE. ok is false for interactions the
// adapter does not answer at all (pings, autocomplete).
func (c *Channel) fromInteraction(ctx context.Context, i *discordgo.Interaction) (ixJob, bool) {
	addr := c.address(ctx, i.GuildID, i.ChannelID)
	who := person(i.User, i.Member)
	base := core.Message{
		ID: i.ID, Address: addr, Sender: who, Direct: i.GuildID == "", Mentioned: true,
		Time: snowflakeTime(i.ID),
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand, discordgo.InteractionMessageComponent, discordgo.InteractionModalSubmit:
	default:
		return ixJob{}, false
	}
	if !c.allowedChannel(addr) {
		return ixJob{local: ephemeral(replyNotAllowed)}, true
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		data := i.ApplicationCommandData()
		if data.Name != commandName {
			return ixJob{local: ephemeral(replyUnknownCmd)}, true
		}
		base.Text = commandText(data)
		return ixJob{msg: base, kind: ixCommand,
			ack: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}}, true

	case discordgo.InteractionMessageComponent:
		b, ok := parseCustomID(i.MessageComponentData().CustomID)
		if !ok || b.modal {
			c.log.Debug("a button plangate did not make", "chat", i.ChannelID)
			return ixJob{local: ephemeral(replyInvalid)}, true
		}
		if b.kind == core.ActionRevise {
			return ixJob{local: c.reviseModal(ctx, i, b.approval)}, true
		}
		base.Action = &core.Action{Kind: b.kind, ApprovalID: b.approval}
		if b.kind == core.ActionAnswer {
			base.Action.Value = strconv.Itoa(b.option)
		}

	default: // modal submit
		data := i.ModalSubmitData()
		b, ok := parseCustomID(data.CustomID)
		if !ok || !b.modal {
			return ixJob{local: ephemeral(replyInvalid)}, true
		}
		step, ok := stepNumber(fieldValue(data.Components, stepField))
		if !ok {
			return ixJob{local: ephemeral(replyBadStep)}, true
		}
		base.Action = &core.Action{Kind: core.ActionRevise, ApprovalID: b.approval, Value: strings.TrimSpace(fieldValue(data.Components, feedbackField)), Step: step}
	}
	if roles := roleKeys(i.Member); len(roles) > 0 {
		c.log.Debug("decision from a guild member", "action", base.Action.Kind, "roles", roles)
	}
	return ixJob{msg: base, kind: ixComponent,
		ack: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}}, true
}

// replyBadStep answers a Revise modal whose step field is not a step number.
const replyBadStep = "The step must be a number like 2, or empty to send the plan back; nothing changed."

// stepNumber reads the Revise modal's step field: 0 when empty (feedback on the whole
// plan), else a number from 1; the engine checks it against the version's steps.
func stepNumber(v string) (int, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= plan.MaxSteps
}

// fieldValue finds the value of the text input id in a modal's rows.
func fieldValue(rows []discordgo.MessageComponent, id string) string {
	for _, row := range rows {
		ar, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, comp := range ar.Components {
			if ti, ok := comp.(*discordgo.TextInput); ok && ti.CustomID == id {
				return ti.Value
			}
		}
	}
	return ""
}

func ephemeral(text string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: channels.Clip(text, maxContent), Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()},
	}
}

// reviseModal answers a Revise click: a modal asking for the feedback, whose submit
// becomes the revise action. A plan already decided says so instead.
func (c *Channel) reviseModal(ctx context.Context, i *discordgo.Interaction, approval string) *discordgo.InteractionResponse {
	rec, ok, err := c.approvals.Load(ctx, approval)
	if err != nil {
		c.log.Error("loading approval record", "chat", i.ChannelID, "err", err)
	}
	if ok && rec.Decided != "" {
		return ephemeral(channels.FirstLine(rec.Decided) + "; nothing changed.")
	}
	title := "Revise the plan"
	if i.Message != nil {
		if l := labelOf(i.Message.Content); l != "" {
			title = "Revise " + l
		}
	}
	rows := []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.TextInput{CustomID: feedbackField, Label: "What should change?", Style: discordgo.TextInputParagraph,
			Placeholder: "Your feedback for the next version", Required: true, MinLength: 1, MaxLength: 4000},
	}}}
	var steps []string
	for _, m := range rec.Msgs {
		if len(m.Steps) > 0 {
			steps = m.Steps
		}
	}
	if len(steps) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{stepInput(steps)}})
	}
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{CustomID: modalID(approval), Title: channels.Clip(title, 45), Components: rows},
	}
}

// stepInput is the Revise modal's step selector: a modal takes only text inputs (discordgo
// has no select for one), so it is a short optional field for the step's number, whose
// placeholder lists the steps. A number makes the feedback a comment on that step, which
// waits for the next revise.
func stepInput(steps []string) discordgo.TextInput {
	var list []string
	for i, s := range steps {
		list = append(list, strconv.Itoa(i+1)+". "+channels.FirstLine(s))
	}
	return discordgo.TextInput{CustomID: stepField, Label: channels.Clip(fmt.Sprintf("Comment on step (1–%d; empty: send back)", len(steps)), 45),
		Style: discordgo.TextInputShort, Placeholder: channels.Clip(strings.Join(list, " · "), 100), Required: false, MaxLength: 4}
}

// planLabel reads "plan v2" from the first line of a plan message ("Plan v2 — Docs cleanup
// (3 steps)", as rendered).
var planLabel = regexp.MustCompile(`^Plan (v\d+)\b`)

func labelOf(content string) string {
	if m := planLabel.FindStringSubmatch(strings.TrimSpace(content)); m != nil {
		return "plan " + m[1]
	}
	return ""
}

// register notes an interaction the engine is about to handle, so its replies can be
// routed to it; acknowledge then answers its callback.
func (c *Channel) register(i *discordgo.Interaction, kind ixKind) *pendingIx {
	p := &pendingIx{ix: i, kind: kind, acked: make(chan struct{})}
	c.mu.Lock()
	c.pending[i.ID] = p
	c.mu.Unlock()
	return p
}

// acknowledge answers the callback of p, off the gateway goroutine. Replies to p wait for it.
func (c *Channel) acknowledge(ctx context.Context, p *pendingIx, resp *discordgo.InteractionResponse, arrived time.Time) {
	p.ackErr = c.respond(ctx, p.ix, resp, arrived)
	close(p.acked)
}

// respond answers an interaction's callback within Discord's three seconds of its arrival,
// trying again once within them after a network failure.
func (c *Channel) respond(ctx context.Context, i *discordgo.Interaction, resp *discordgo.InteractionResponse, arrived time.Time) error {
	err := context.DeadlineExceeded
	if left := c.tune.ackTime - time.Since(arrived); left > 0 {
		err = c.doWithin(ctx, left, 2, "answering an interaction", func(opts ...discordgo.RequestOption) error {
			if time.Since(arrived) > c.tune.ackTime {
				return context.DeadlineExceeded // too late to matter; do not answer twice
			}
			return c.s.InteractionRespond(i, resp, opts...)
		})
	}
	if err != nil {
		c.log.Error("an interaction could not be answered", "chat", i.ChannelID, "interaction", i.ID, "err", err)
	}
	return err
}

// claim returns the interaction r is the first reply to, if any. ReplyDecided is not an
// answer (it edits the plan message), and neither is a reply to an interaction the
// engine already answered.
func (c *Channel) claim(r core.Reply) *pendingIx {
	if r.InReplyTo == "" || r.Kind == core.ReplyDecided {
		return nil
	}
	c.mu.Lock()
	p := c.pending[r.InReplyTo]
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used {
		return nil
	}
	p.used = true
	return p
}

// answerInteraction shows r as the outcome of interaction p: the edit of a /plan command's
// deferred response, or a follow-up to a click (ephemeral for a notice). Replies that must
// stay editable after the interaction's token expires (plans, questions, progress, files,
// long text) go to the channel, a /plan command then showing their first line. ok is
// false when r still has to be posted.
func (c *Channel) answerInteraction(ctx context.Context, p *pendingIx, r core.Reply) (string, bool) {
	select {
	case <-p.acked:
	case <-ctx.Done():
		return "", false
	case <-time.After(c.tune.ackWait):
		return "", false
	}
	if p.ackErr != nil {
		return "", false // an unanswered interaction cannot be followed up
	}
	content, simple := c.single(r)
	switch {
	case p.kind == ixCommand && simple:
		id, err := c.editOriginal(ctx, p.ix, content)
		if err == nil {
			return id, true
		}
		c.log.Warn("could not edit the deferred answer; posting instead", "chat", p.ix.ChannelID, "err", err)
	case p.kind == ixCommand:
		if head := channels.FirstLine(r.Text); head != "" {
			if _, err := c.editOriginal(ctx, p.ix, channels.DiscordMarkdown(channels.Clip(head, 200))); err != nil {
				c.log.Warn("could not edit the deferred answer", "chat", p.ix.ChannelID, "err", err)
			}
		}
	case simple:
		var flags discordgo.MessageFlags
		if r.Kind == core.ReplyNotice {
			flags = discordgo.MessageFlagsEphemeral
		}
		var m *discordgo.Message
		err := c.doIx(ctx, "sending a follow-up", func(opts ...discordgo.RequestOption) error {
			var err error
			m, err = c.s.FollowupMessageCreate(p.ix, true, &discordgo.WebhookParams{
				Content: content, AllowedMentions: noMentions(), Flags: flags, Components: []discordgo.MessageComponent{},
			}, opts...)
			return err
		})
		if err == nil && m != nil {
			return m.ID, true
		}
		c.log.Warn("could not send a follow-up; posting instead", "chat", p.ix.ChannelID, "err", err)
	}
	return "", false
}

// single renders r as one message's content when it is plain text that fits one message.
func (c *Channel) single(r core.Reply) (string, bool) {
	if (r.Kind != core.ReplyText && r.Kind != core.ReplyNotice) || len(r.Buttons) > 0 || len(r.Attachments) > 0 {
		return "", false
	}
	if channels.LongReply(c.cfg.LongReplyAsFile, r) {
		return "", false
	}
	chunks := textChunks(r.Text)
	if len(chunks) != 1 {
		return "", false
	}
	return chunks[0], true
}

func (c *Channel) editOriginal(ctx context.Context, i *discordgo.Interaction, content string) (string, error) {
	var m *discordgo.Message
	err := c.doIx(ctx, "editing an interaction's answer", func(opts ...discordgo.RequestOption) error {
		rows := []discordgo.MessageComponent{}
		var err error
		m, err = c.s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &content, Components: &rows, AllowedMentions: noMentions()}, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", nil
	}
	return m.ID, nil
}

// finish forgets a handled interaction. A /plan command the engine said nothing about (a
// duplicate delivery) loses its "thinking…" placeholder, unless it is kept for the next
// start or was replayed (its answer may be what the process before the restart showed).
func (c *Channel) finish(ctx context.Context, p *pendingIx, kept bool) {
	c.mu.Lock()
	delete(c.pending, p.ix.ID)
	c.mu.Unlock()
	p.mu.Lock()
	used := p.used
	p.used = true
	p.mu.Unlock()
	if used || kept || p.replayed || p.kind != ixCommand {
		return
	}
	<-p.acked
	if p.ackErr != nil {
		return
	}
	err := c.doIx(ctx, "removing an unanswered placeholder", func(opts ...discordgo.RequestOption) error {
		return c.s.InteractionResponseDelete(p.ix, opts...)
	})
	if err != nil {
		c.log.Warn("could not remove the placeholder of a command", "chat", p.ix.ChannelID, "err", err)
	}
}
