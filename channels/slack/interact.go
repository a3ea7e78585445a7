package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// The ids plangate gives its buttons and its modal. A decision button's value is the
// approval id; an answer button's value is "<question id>:<option number>:<option text>".
const (
	actionAccept   = "plangate_accept"
	actionRevise   = "plangate_revise"
	actionAuto     = "plangate_auto"
	actionUndo     = "plangate_undo"
	actionAnswer   = "plangate_answer_" // + option number: action ids are unique per message
	decideBlock    = "plangate_decide"
	answersBlock   = "plangate_answers"
	reviseCallback = "plangate_revise"
	feedbackBlock  = "feedback"
	feedbackAction = "text"
	stepBlock      = "step"
	stepAction     = "step"
)

// Slack's limits on a static select: its options, and an option's text.
const (
	maxOptions    = 100
	maxOptionText = 75
)

// Answers the adapter gives itself.
const (
	noteInvalid  = "This button is not valid; nothing changed."
	noteNotHere  = "plangate does not answer in this conversation."
	noteNoModal  = "The feedback form could not be opened. Use /plan revise <feedback> in the plan's thread instead."
	noteNoThread = "A thread for this plan could not be started here; nothing changed. Mention the bot with your goal instead."
)

// fromInteraction handles a click on a button or the submission of the Revise modal.
func (c *Channel) fromInteraction(ctx context.Context, cb slackgo.InteractionCallback, req *socketmode.Request) (job, bool) {
	switch cb.Type {
	case slackgo.InteractionTypeBlockActions:
		return c.fromClick(ctx, cb, req)
	case slackgo.InteractionTypeViewSubmission:
		return c.fromModal(ctx, cb, req)
	}
	return job{}, false
}

func (c *Channel) fromClick(ctx context.Context, cb slackgo.InteractionCallback, req *socketmode.Request) (job, bool) {
	if len(cb.ActionCallback.BlockActions) == 0 || cb.User.ID == "" {
		return job{}, false
	}
	act := cb.ActionCallback.BlockActions[0]
	ch := cmp.Or(cb.Container.ChannelID, cb.Channel.ID)
	msgTS := cb.Container.MessageTs
	// plangate's buttons are in threads; a top-level one starts its own
	thread := cmp.Or(cb.Container.ThreadTs, cb.Message.ThreadTimestamp, msgTS)
	if ch == "" {
		return job{}, false // a button in a modal or on the home tab: plangate puts none there
	}
	user := cb.User.ID
	id := cmp.Or(cb.TriggerID, act.ActionTs+":"+user)
	if !c.seen.first("act:" + id) {
		return job{}, false
	}
	if !c.allowedChannel(ch) {
		return c.say(ch, thread, user, noteNotHere), true
	}
	b, ok := parseButton(act.ActionID, act.Value)
	if !ok {
		c.log.Debug("a button plangate did not make", "slack_channel", ch, "action", act.ActionID)
		return c.say(ch, thread, user, noteInvalid), true
	}
	if b.kind == core.ActionRevise {
		return c.reviseClick(ctx, cb, ch, thread, b.approval), true
	}
	at := tsTime(act.ActionTs)
	if at.IsZero() {
		at = time.Now()
	}
	m := c.asked(id, ch, thread, thread, core.Person{ID: user, Name: c.nameOf(ctx, user, cb.User.Name)}, at)
	m.ReplyTo = msgTS
	m.Action = &core.Action{Kind: b.kind, ApprovalID: b.approval, Value: b.value}
	return job{msg: m}, true
}

// asked is the message of an interaction by sender in ch's thread, whose first answer is
// shown to sender in shownIn (a thread of ch, "" = top level).
func (c *Channel) asked(id, ch, thread, shownIn string, sender core.Person, at time.Time) *core.Message {
	c.waiting.expect(id, ch, shownIn, sender.ID)
	return &core.Message{ID: id, Address: c.address(ch, thread), Sender: sender, Direct: strings.HasPrefix(ch, "D"), Mentioned: true, Time: at}
}

// reviseClick opens the feedback modal, whose submission becomes the revise action; a
// decided plan says so instead.
func (c *Channel) reviseClick(ctx context.Context, cb slackgo.InteractionCallback, ch, thread, approval string) job {
	user := cb.User.ID
	rec, ok := c.loadApproval(ctx, approval)
	if ok && rec.Decided != "" {
		return c.say(ch, thread, user, firstLine(rec.Decided)+"; nothing changed.")
	}
	var steps []string
	for _, m := range rec.Msgs { // none when there is no record
		if len(m.Steps) > 0 {
			steps = m.Steps
		}
	}
	label := firstLine(cb.Message.Text)
	meta, _ := json.Marshal(modalMeta{Approval: approval, Chat: ch, Thread: thread})
	trigger := cb.TriggerID
	return job{local: func(ctx context.Context) {
		if err := c.openRevise(ctx, trigger, string(meta), label, steps); err != nil {
			c.ephemeral(ctx, ch, thread, user, noteNoModal)
		}
	}}
}

// say is the job of showing text to user only, in ch's thread.
func (c *Channel) say(ch, thread, user, text string) job {
	return job{local: func(ctx context.Context) { c.ephemeral(ctx, ch, thread, user, text) }}
}

// modalMeta is the Revise modal's private_metadata: where its feedback belongs.
type modalMeta struct {
	Approval string `json:"a"`
	Chat     string `json:"c"`
	Thread   string `json:"t"`
}

// openRevise opens the feedback modal at once, never behind the engine: Slack's trigger id
// is valid for three seconds. With the version's steps it offers them in an optional
// select: picking one makes the feedback a comment on that step, which waits for the next
// revise, as /plan revise N: <comment> does.
func (c *Channel) openRevise(ctx context.Context, trigger, meta, label string, steps []string) error {
	if trigger == "" {
		return fmt.Errorf("opening the revise form: the click carried no trigger id")
	}
	intro := "What should change in this plan?"
	if label != "" {
		intro = "What should change in *" + escapeMrkdwn(channels.Clip(label, 200)) + "*?"
	}
	input := slackgo.NewPlainTextInputBlockElement(plain("Add tests first; keep the API as it is."), feedbackAction)
	input.Multiline = true
	view := slackgo.ModalViewRequest{
		Type:            slackgo.VTModal,
		CallbackID:      reviseCallback,
		Title:           plain("Revise plan"),
		Submit:          plain("Send back"),
		Close:           plain("Cancel"),
		PrivateMetadata: meta,
		Blocks: slackgo.Blocks{BlockSet: []slackgo.Block{
			slackgo.NewSectionBlock(mrkdwn(intro), nil, nil),
			slackgo.NewInputBlock(feedbackBlock, plain("Feedback"), nil, input),
		}},
	}
	if sel := stepSelect(steps); sel != nil {
		view.Submit = plain("Send")
		hint := plain("Leave it empty to send the plan back now; pick a step to record a comment on it, sent with the next revise.")
		block := slackgo.NewInputBlock(stepBlock, plain("Comment on a step (optional)"), hint, sel)
		block.Optional = true
		view.Blocks.BlockSet = append(view.Blocks.BlockSet, block)
	}
	return c.do(ctx, "", false, "views.open", func(ctx context.Context) error {
		_, err := c.api.OpenViewContext(ctx, trigger, view)
		return err
	})
}

// stepSelect is the static select of steps ("2. Call the API", value "2"), nil for none.
func stepSelect(steps []string) *slackgo.SelectBlockElement {
	if len(steps) == 0 {
		return nil
	}
	var opts []*slackgo.OptionBlockObject
	for i, s := range steps[:min(len(steps), maxOptions)] {
		n := strconv.Itoa(i + 1)
		opts = append(opts, slackgo.NewOptionBlockObject(n, plain(channels.Clip(n+". "+firstLine(s), maxOptionText)), nil))
	}
	return slackgo.NewOptionsSelectBlockElement(slackgo.OptTypeStatic, plain("The whole plan"), stepAction, opts...)
}

// stepOf is the step picked in the Revise modal, 0 for none (or one plangate did not offer).
func stepOf(cb slackgo.InteractionCallback) int {
	if cb.View.State == nil {
		return 0
	}
	n, err := strconv.Atoi(cb.View.State.Values[stepBlock][stepAction].SelectedOption.Value)
	if err != nil || n < 1 || n > maxOptions {
		return 0
	}
	return n
}

// fromModal turns a submitted Revise modal into a revise action with its feedback.
func (c *Channel) fromModal(ctx context.Context, cb slackgo.InteractionCallback, req *socketmode.Request) (job, bool) {
	if cb.View.CallbackID != reviseCallback || cb.User.ID == "" {
		return job{}, false
	}
	feedback := feedbackOf(cb)
	if feedback == "" {
		return job{}, false // the acknowledgement kept the modal open with a hint
	}
	var meta modalMeta
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta); err != nil || !channels.ValidID(meta.Approval) || meta.Chat == "" {
		c.log.Debug("a revise form plangate did not make", "err", err)
		return job{}, false
	}
	id := cmp.Or(cb.TriggerID, "view:"+cb.View.ID+":"+cb.View.Hash)
	if !c.seen.first("act:" + id) {
		return job{}, false
	}
	user := cb.User.ID
	if !c.allowedChannel(meta.Chat) {
		return c.say(meta.Chat, meta.Thread, user, noteNotHere), true
	}
	m := c.asked(id, meta.Chat, meta.Thread, meta.Thread, core.Person{ID: user, Name: c.nameOf(ctx, user, cb.User.Name)}, time.Now())
	m.Action = &core.Action{Kind: core.ActionRevise, ApprovalID: meta.Approval, Value: feedback, Step: stepOf(cb)}
	return job{msg: m}, true
}

// feedbackOf is the text typed into the Revise modal.
func feedbackOf(cb slackgo.InteractionCallback) string {
	if cb.View.State == nil {
		return ""
	}
	return strings.TrimSpace(cb.View.State.Values[feedbackBlock][feedbackAction].Value)
}

// button is a decoded plangate button.
type button struct {
	kind     core.ActionKind
	approval string // the approval id, or the question id of an answer
	value    string // an answer: the option's text, or its number if the text did not fit
}

// parseButton decodes a click; anything plangate did not make is refused.
func parseButton(actionID, value string) (button, bool) {
	switch actionID {
	case actionAccept:
		return button{kind: core.ActionAccept, approval: value}, channels.ValidID(value)
	case actionRevise:
		return button{kind: core.ActionRevise, approval: value}, channels.ValidID(value)
	case actionAuto:
		return button{kind: core.ActionAuto, approval: value}, channels.ValidID(value)
	case actionUndo:
		return button{kind: core.ActionUndo, approval: value}, channels.ValidID(value)
	}
	if !strings.HasPrefix(actionID, actionAnswer) {
		return button{}, false
	}
	qid, rest, ok := strings.Cut(value, ":")
	if !ok || !channels.ValidID(qid) {
		return button{}, false
	}
	num, text, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > 99 || strconv.Itoa(n) != num || actionID != actionAnswer+num {
		return button{}, false
	}
	if text == "" {
		text = num
	}
	return button{kind: core.ActionAnswer, approval: qid, value: text}, true
}

// maxButtonValue is Slack's limit on a button's value.
const maxButtonValue = 2000

// buttonValue encodes what a button does into its action id and value; ok is false for a
// button plangate cannot make.
func buttonValue(a core.Action, option int) (actionID, value string, ok bool) {
	if !channels.ValidID(a.ApprovalID) {
		return "", "", false
	}
	switch a.Kind {
	case core.ActionAccept:
		return actionAccept, a.ApprovalID, true
	case core.ActionRevise:
		return actionRevise, a.ApprovalID, true
	case core.ActionAuto:
		return actionAuto, a.ApprovalID, true
	case core.ActionUndo:
		return actionUndo, a.ApprovalID, true
	case core.ActionAnswer:
		num := strconv.Itoa(option)
		value = a.ApprovalID + ":" + num
		if v := value + ":" + a.Value; a.Value != "" && len(v) <= maxButtonValue {
			value = v
		}
		return actionAnswer + num, value, option >= 1 && option <= 99
	}
	return "", "", false
}
