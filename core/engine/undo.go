package engine

import (
	"context"
	"fmt"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// /plan undo and the report's Undo button (docs/design.md §13): the files a version's
// execution changed (Run.Changed.Paths) are put back as the fingerprint at its
// acceptance has them (Run.Base(), with the contents the fingerprints kept), provided
// each is still as its last mutating call left it (Run.Changed.Last). The disk is
// written before the commit that records it: a failed commit leaves files put back and
// no record, which the log says; a second undo then finds them changed and refuses.

// undo carries out /plan undo of the current plan, or of the version whose approval id a
// button carries.
func (t *jobRun) undo(ctx context.Context, approvalID string) error {
	in := t.personInput()
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	target := cur
	if approvalID != "" && (cur == nil || cur.ApprovalID != approvalID) {
		target = nil
		if p, err := t.e.d.Store.PlanByApproval(ctx, approvalID); err == nil {
			target = &p
		}
		if target == nil {
			return t.applyInbound(ctx, machine.UndoRefusal(t.sess, nil, in, "That Undo button is no longer valid; nothing changed. /plan undo works on the latest plan.", false))
		}
	}
	if why, ok := machine.Undoable(t.sess, cur, target); !ok {
		return t.applyInbound(ctx, machine.UndoRefusal(t.sess, target, in, why, false))
	}
	p := *target
	r, ok := t.e.d.Tools.(core.Restorer)
	if !ok {
		return t.applyInbound(ctx, machine.UndoRefusal(t.sess, &p, in, "The workspace tools here cannot put files back; nothing changed.", false))
	}
	base, last := p.Run.Base(), p.Run.Changed.Last
	for _, tree := range []*plan.Tree{base, last} {
		if err := t.e.loadTree(ctx, tree); err != nil {
			t.e.d.Log.Error("undo: loading a fingerprint", "session", t.sess.ID, "plan", p.ID, "err", err)
			return t.answer(ctx, noticef("Cannot undo plan v%d: plangate could not read what it recorded of the workspace (%s). Nothing was changed.", p.Version, machine.OneLine(err.Error())))
		}
	}
	res, err := r.Restore(ctx, t.e.workspace(t.sess), base, last, p.Run.Changed.Paths)
	if err != nil {
		t.e.d.Log.Error("undo: putting files back", "session", t.sess.ID, "plan", p.ID, "done", len(res.Files), "err", err)
		if len(res.Files) == 0 {
			return t.answer(ctx, noticef("Cannot undo plan v%d: %s. Nothing was changed.", p.Version, machine.OneLine(err.Error())))
		}
		return t.answer(ctx, noticef("The undo of plan v%d stopped after %d of %d files: %s. The files are partly put back; check them before going on.",
			p.Version, len(res.Files), len(p.Run.Changed.Paths), machine.OneLine(err.Error())))
	}
	if len(res.Changed) > 0 || len(res.Unkept) > 0 {
		return t.applyInbound(ctx, machine.UndoRefused(t.sess, p, in, res))
	}
	o, err := machine.Undone(t.sess, p, in, res.Files)
	if err != nil {
		return fmt.Errorf("recording the undo: %w", err)
	}
	return t.applyInbound(ctx, o)
}
