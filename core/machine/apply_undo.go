package machine

import (
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// /plan undo (docs/design.md §13): a version that completed, was stopped by /plan off or
// stopped by itself can have the files its execution changed put back as they were at
// its acceptance, once. The engine asks Undoable before it looks at the disk, and
// UndoRefused or Undone once it has.

// Undoable says why /plan undo of target cannot be made, or ok. cur is the session's
// current plan; target the version undo is asked of (the current one, or the one a
// button names).
func Undoable(s core.Session, cur, target *core.Plan) (why string, ok bool) {
	switch {
	case target == nil:
		return "There is no plan to undo here. /plan status shows where things are.", false
	case cur == nil || cur.ID != target.ID:
		now := "a newer plan came since"
		if cur != nil {
			now = fmt.Sprintf("plan v%d came since", cur.Version)
		}
		return fmt.Sprintf("That Undo is for plan v%d, and %s; only the latest plan can be undone. Nothing changed.", target.Version, now), false
	}
	p := target
	switch u := p.Run.Undone; {
	case u != nil:
		return fmt.Sprintf("%s was already undone at %s by %s. Nothing changed.", PlanLabel(*p), core.Clock(u.At), undoneBy(u)), false
	case p.Status == core.PlanPending:
		return fmt.Sprintf("%s is waiting for a decision and changed nothing yet. Decide: /plan accept · /plan revise <feedback>", PlanLabel(*p)), false
	case p.Status == core.PlanAccepted && p.Run.Stop == nil:
		return fmt.Sprintf("%s is still running. Wait for its report, or stop it with /plan off, then /plan undo.", PlanLabel(*p)), false
	case p.Status != core.PlanAccepted && p.Status != core.PlanCompleted && p.Status != core.PlanAborted:
		return fmt.Sprintf("%s was never carried out (%s); there is nothing to undo.", PlanLabel(*p), p.Status), false
	case p.Run.Changed == nil || len(p.Run.Changed.Paths) == 0:
		return fmt.Sprintf("%s changed no files; there is nothing to undo.", PlanLabel(*p)), false
	case p.Run.Base() == nil || p.Run.Changed.Last == nil:
		return fmt.Sprintf("%s cannot be undone: plangate kept no fingerprint of the workspace when it was accepted.", PlanLabel(*p)), false
	}
	return "", true
}

// UndoRefusal is the outcome of a refused /plan undo: the reason, and an audit row when
// the refusal came from the disk (what had changed) rather than the phase.
func UndoRefusal(s core.Session, p *core.Plan, in Input, why string, audited bool) Outcome {
	x := &transition{s: s, in: in, next: s, o: Outcome{Session: s, before: s}}
	if !audited {
		x.refuse(why)
		return x.finish()
	}
	x.refuse(why, x.event(core.EventRefused, p, "undo by "+x.in.who()+": "+why))
	return x.finish()
}

// UndoRefused is the refusal of /plan undo of p when the disk says no: files changed
// since the execution left them, or files whose state at acceptance was not kept.
func UndoRefused(s core.Session, p core.Plan, in Input, r plan.Restore) Outcome {
	var why string
	switch {
	case len(r.Changed) > 0:
		why = fmt.Sprintf("Cannot undo plan v%d: %s changed since the plan left %s (%s). Nothing was changed; put %s back as the plan left %s, or undo by hand.",
			p.Version, countNoun(len(r.Changed), "file"), them(len(r.Changed)), plan.NameSome(r.Changed, 10), them(len(r.Changed)), them(len(r.Changed)))
	default:
		why = fmt.Sprintf("Cannot undo plan v%d: plangate did not keep %s as at acceptance (%s; files over 1 MiB are not kept). Nothing was changed.",
			p.Version, countNoun(len(r.Unkept), "file"), plan.NameSome(r.Unkept, 10))
	}
	return UndoRefusal(s, &p, in, why, true)
}

// Undone is the outcome of a /plan undo of p that put files back: the version records it
// (Run.Undone), an undone audit row lists them, and a stopped execution ends (plan
// aborted, plan mode off) since what it was working on is gone.
func Undone(s core.Session, p core.Plan, in Input, files []plan.UndoneFile) (Outcome, error) {
	x := &transition{m: NewMachine(), s: s, cur: &p, in: in, next: s,
		o: Outcome{Session: s, before: s, copies: in.Rules.WorkspaceCopy}}
	p.Run.Undone = &plan.Undone{By: decidedBy(in.Actor), ByName: in.Name, At: in.Now, Files: files}
	p.UpdatedAt = in.Now
	words := undoneWords(files)
	ended := ""
	if p.Status == core.PlanAccepted {
		x.leavePlanMode(core.PhaseOff)
		var err error
		if p, err = x.decide(p, TrigOff, string(core.PlanAborted), "", "aborted (/plan undo "+x.by()+")"); err != nil {
			return Outcome{}, err
		}
		x.record(x.event(core.EventAborted, &p, "by /plan undo"))
		ended = " Its execution is ended and plan mode is off."
	} else {
		x.o.Change.Plans = append(x.o.Change.Plans, p)
	}
	x.record(x.event(core.EventUndone, &p, words))
	x.o.say(core.ReplyText, fmt.Sprintf("Undone plan v%d %q: %s put back as at acceptance (%s).%s", p.Version, p.Body.Title,
		countNoun(len(files), "file"), words, ended))
	return x.finish(), nil
}

// undoneWords lists what undo did: "restored a.txt, removed new.txt, recreated gone.txt".
func undoneWords(files []plan.UndoneFile) string {
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = string(f.Action) + " " + f.Path
	}
	return plan.NameSome(parts, 10)
}

func undoneBy(u *plan.Undone) string {
	if u.ByName != "" {
		return u.ByName
	}
	return strings.TrimPrefix(u.By, "person:")
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
