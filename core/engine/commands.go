package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Person commands and buttons become triggers here: authorization is checked, the inputs
// Apply needs are loaded from the store, and the Outcome goes to the applier. Nothing in
// this file decides a transition.

// dispatch routes the job's message: a button, a /plan command, or text for the agent.
func (t *jobRun) dispatch(ctx context.Context) error {
	m := t.msg()
	if m.Action != nil {
		return t.onAction(ctx, *m.Action)
	}
	switch r := t.j.parsed; r.Kind {
	case commands.IsUsage:
		return t.answer(ctx, core.Reply{Kind: core.ReplyNotice, Text: r.Reply})
	case commands.IsCommand:
		if reply, bad := t.badNudgeSpec(r.Cmd); bad {
			return t.answer(ctx, core.Reply{Kind: core.ReplyNotice, Text: reply})
		}
		return t.onCommand(ctx, r.Cmd)
	}
	return t.onText(ctx)
}

// badNudgeSpec checks the cron spec of /plan nudge with the scheduler's parser: a spec it
// refuses is a usage error like any the grammar finds, answered before authorization.
func (t *jobRun) badNudgeSpec(c commands.Command) (string, bool) {
	r, specs := c.Nudge, t.e.d.NudgeSpecs
	if c.Name != commands.Nudge || r == nil || r.Mode != commands.NudgeModeCron || specs == nil {
		return "", false
	}
	if err := specs.Check(r.Spec, t.e.d.Now()); err != nil {
		return r.CronRefusal(err.Error()), true
	}
	return "", false
}

func (t *jobRun) onCommand(ctx context.Context, c commands.Command) error {
	if !machine.Authorized(t.e.approvers(t.sess.Address), c.Spec.Who, t.sess, t.msg()) {
		return t.refuseUnauthorized(ctx, string(c.Name))
	}
	in := t.personInput()
	switch c.Name {
	case commands.Status:
		return t.status(ctx)
	case commands.Help:
		return t.answer(ctx, core.Reply{Text: commands.HelpText()})
	case commands.Show:
		return t.show(ctx)
	case commands.On:
		in.Text = c.Args
		return t.applyTrigger(ctx, machine.TrigOn, in)
	case commands.Off:
		return t.applyTrigger(ctx, machine.TrigOff, in)
	case commands.Accept:
		in.Version = c.Version
		in.Stale = c.Stale
		in.SeenApproval = t.j.seenApproval
		return t.applyTrigger(ctx, machine.TrigAccept, in)
	case commands.Revise:
		in.Text = c.Args
		in.SeenApproval = t.j.seenApproval
		if len(c.Steps) > 0 {
			in.Steps = c.Steps
			return t.applyTrigger(ctx, machine.TrigComment, in)
		}
		return t.applyTrigger(ctx, machine.TrigRevise, in)
	case commands.Edit:
		in.Files = t.msg().Attachments
		ids, err := machine.DrawIDs(t.e.d.Random, machine.TrigEdit)
		if err != nil {
			return err
		}
		in.IDs = ids
		return t.applyTrigger(ctx, machine.TrigEdit, in)
	case commands.Answer:
		in.Text = c.Args
		return t.applyTrigger(ctx, machine.TrigAnswer, in)
	case commands.Auto:
		if c.Auto == commands.AutoOn {
			return t.applyTrigger(ctx, machine.TrigAutoOn, in)
		}
		return t.applyTrigger(ctx, machine.TrigAutoOff, in)
	case commands.Undo:
		return t.undo(ctx, "")
	case commands.Nudge:
		o, err := machine.ApplyNudge(t.sess, c.Nudge, in)
		if err != nil {
			return err
		}
		return t.applyInbound(ctx, o)
	}
	return fmt.Errorf("unhandled command %q", c.Name)
}

// status answers /plan status from the stored session, plan and schedules.
func (t *jobRun) status(ctx context.Context) error {
	cur, err := t.currentPlan(ctx)
	if err != nil {
		t.e.d.Log.Error("status: loading plan", "session", t.sess.ID, "err", err)
	}
	ns, err := t.e.d.Store.Nudges(ctx, t.sess.ID)
	if err != nil {
		t.e.d.Log.Error("status: listing nudges", "session", t.sess.ID, "err", err)
	}
	risk := plan.RiskLevel("")
	if cur != nil {
		risk = machine.PlanRisk(cur.Body)
	}
	pol := machine.PolicyFor(t.e.cfg.Policies, t.sess.Address, risk)
	text := machine.StatusText(t.sess, cur, pol, nudgeLine(t.sess, ns, err == nil, t.e.d.Now()))
	if cur != nil && cur.Status == core.PlanPending && cur.Run.Escalated != nil {
		text += fmt.Sprintf("\nescalated: nobody decided after the last reminder; told %s at %s", strings.Join(cur.Run.Escalated.To, ", "), core.Clock(cur.Run.Escalated.At))
	}
	if why, ok := t.e.fallbacks.Load(t.sess.ID); ok {
		text += "\nplanner: " + why.(string)
	}
	return t.answer(ctx, core.Reply{Text: text})
}

// noteFallback remembers, for /plan status, that the last planning call of session sid
// fell back from llm.plan_model (why), or that it did not (why empty).
func (e *Engine) noteFallback(sid, why string) {
	if why == "" {
		e.fallbacks.Delete(sid)
		return
	}
	e.fallbacks.Store(sid, why)
}

// show answers /plan show. The plan file is written again only if it was lost: show runs
// beside the session's queue and must not overwrite a newer rendering.
func (t *jobRun) show(ctx context.Context) error {
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	if cur != nil {
		if _, err := os.Stat(cur.File); errors.Is(err, fs.ErrNotExist) {
			if _, err := t.e.files.write(t.sess, *cur); err != nil {
				t.e.d.Log.Error("writing plan file again", "plan", cur.ID, "err", err)
			}
		}
	}
	return t.answer(ctx, machine.ShowReply(t.sess, cur))
}

func (t *jobRun) onAction(ctx context.Context, a core.Action) error {
	who := commands.Approver
	if a.Kind == core.ActionAnswer {
		who = commands.ApproverOrOwner
	}
	if !machine.Authorized(t.e.approvers(t.sess.Address), who, t.sess, t.msg()) {
		return t.refuseUnauthorized(ctx, string(a.Kind))
	}
	in := t.personInput()
	in.ApprovalID = a.ApprovalID
	switch a.Kind {
	case core.ActionAccept:
		return t.applyTrigger(ctx, machine.TrigAccept, in)
	case core.ActionRevise:
		in.Text = a.Value
		if a.Step > 0 {
			in.Steps = []int{a.Step}
			return t.applyTrigger(ctx, machine.TrigComment, in)
		}
		return t.applyTrigger(ctx, machine.TrigRevise, in)
	case core.ActionAuto:
		return t.applyTrigger(ctx, machine.TrigAutoOn, in)
	case core.ActionAnswer:
		in.Text = a.Value
		return t.applyTrigger(ctx, machine.TrigAnswer, in)
	case core.ActionUndo:
		return t.undo(ctx, a.ApprovalID)
	}
	return t.answer(ctx, core.Reply{Kind: core.ReplyNotice, Text: "That button is not one plangate knows; nothing changed."})
}

// onText hands a person's plain message to ApplyMessage.
func (t *jobRun) onText(ctx context.Context) error {
	text := machine.MessageText(t.msg())
	if text == "" {
		return nil
	}
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	in := t.personInput()
	in.MayAnswer = machine.Authorized(t.e.approvers(t.sess.Address), commands.ApproverOrOwner, t.sess, t.msg())
	o, err := machine.ApplyMessage(t.sess, cur, text, in)
	if err != nil {
		return err
	}
	return t.applyInbound(ctx, o)
}

// applyTrigger loads what trigger tr needs, applies it and hands the outcome to the applier.
func (t *jobRun) applyTrigger(ctx context.Context, tr machine.Trigger, in machine.Input) error {
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	if in.Ref, err = t.referenced(ctx, cur, in); err != nil {
		return err
	}
	t.withTree(ctx, tr, cur, &in)
	o, err := machine.Apply(t.sess, cur, tr, in)
	if err != nil {
		return err
	}
	return t.applyInbound(ctx, o)
}

// referenced loads the plan a button's approval id or "/plan accept vN" names when it is
// not the current plan, so Apply can say why deciding on it changes nothing.
func (t *jobRun) referenced(ctx context.Context, cur *core.Plan, in machine.Input) (*core.Plan, error) {
	st := t.e.d.Store
	switch {
	case in.ApprovalID != "" && in.ApprovalID != t.sess.ApprovalID:
		p, err := st.PlanByApproval(ctx, in.ApprovalID)
		if err != nil {
			return nil, nil // unknown or unreadable: "that button is no longer valid"
		}
		return &p, nil
	case in.Version != 0 && cur != nil && in.Version < cur.Version:
		plans, err := st.Plans(ctx, t.sess.ID)
		if err != nil {
			return nil, fmt.Errorf("listing plans: %w", err)
		}
		for _, p := range plans {
			if p.Version == in.Version {
				return &p, nil
			}
		}
	}
	return nil, nil
}

// refuseUnauthorized answers a decision by someone who may not make it.
func (t *jobRun) refuseUnauthorized(ctx context.Context, what string) error {
	return t.applyInbound(ctx, machine.Unauthorized(t.sess, t.personInput(), what, len(t.e.approvers(t.sess.Address)) > 0))
}

// personInput is the Input of the job's sender.
func (t *jobRun) personInput() machine.Input {
	m := t.msg()
	a := core.PersonActor(m.Sender.ID)
	if m.Sender.Admin {
		a = core.AdminActor(strings.TrimPrefix(m.Sender.ID, "admin:"))
	}
	return machine.Input{Now: t.e.d.Now(), Actor: a, Name: m.Sender.Name, Rules: t.e.rules(), Requester: senderKey(m)}
}

// senderKey names the sender of m as approver lists and approvals do: "channel:user id",
// or "admin:<name>" for an operator of the admin API.
func senderKey(m core.Message) string {
	if m.Sender.Admin {
		return m.Sender.ID
	}
	if m.Sender.ID == "" {
		return ""
	}
	return m.Address.Channel + ":" + m.Sender.ID
}

// currentPlan loads the session's current plan; nil if there is none.
func (t *jobRun) currentPlan(ctx context.Context) (*core.Plan, error) {
	if t.sess.PlanID == "" {
		return nil, nil
	}
	if p := t.loaded; p != nil {
		t.loaded = nil
		if p.ID == t.sess.PlanID && t.loadedAt == t.sess.Version {
			return p, nil
		}
	}
	p, err := t.e.d.Store.Plan(ctx, t.sess.PlanID)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading plan %s: %w", t.sess.PlanID, err)
	}
	return &p, nil
}

// rules are the configuration flags transitions depend on.
func (e *Engine) rules() machine.Rules {
	c := e.cfg
	r := machine.Rules{PlanMode: c.PlanMode, StartInPlan: c.StartInPlan, Nudges: c.Nudges,
		ApprovalTimeout: c.ApprovalTimeout, PlansDir: c.PlansDir, Specs: e.d.NudgeSpecs,
		WorkspaceCopy: c.WorkspaceCopy && c.PlanMode, Policies: c.Policies, Approvers: c.Approvers, AutoRules: c.AutoApproveRules, EditHints: c.EditHints,
		Reach: c.Reach, Destructive: e.files.marks.isDestructive, MaxVerifierRetries: c.MaxVerifierRetries,
		Boundary: c.Boundary}
	if e.d.Checks != nil {
		r.CheckArgv = e.d.Checks.CheckArgv
	}
	return r
}

// approvers is the approver list in force for a session at addr: its policy's, or the
// global one.
func (e *Engine) approvers(addr core.Address) []string {
	return machine.PolicyFor(e.cfg.Policies, addr, "").ApproverList(e.cfg.Approvers)
}
