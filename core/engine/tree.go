package engine

import (
	"context"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The plan bound to the workspace (docs/design.md §13): a new version records the
// workspace's fingerprint, and an acceptance compares the workspace with it.

// fingerprint is the fingerprint of the session's workspace now; nil when the toolbox
// keeps none.
func (t *jobRun) fingerprint(ctx context.Context) (*plan.Tree, error) {
	f, ok := t.e.d.Tools.(core.Fingerprinter)
	if !ok {
		return nil, nil
	}
	return f.Fingerprint(ctx, t.e.workspace(t.sess))
}

// withTree puts the workspace's fingerprint into in for trigger tr: a new version records
// it (a failure is logged, and the version is then not checked at acceptance); an
// acceptance of a version that recorded one is checked against it (a failure is the
// refusal's reason).
func (t *jobRun) withTree(ctx context.Context, tr machine.Trigger, cur *core.Plan, in *machine.Input) {
	switch tr {
	case machine.TrigPropose, machine.TrigAutoPropose, machine.TrigEdit:
	case machine.TrigAccept:
		if cur == nil || cur.Status != core.PlanPending || cur.Run.Tree == nil {
			return
		}
	default:
		return
	}
	tree, err := t.fingerprint(ctx)
	if err != nil {
		t.e.d.Log.Warn("fingerprinting the workspace", "session", t.sess.ID, "trigger", tr, "err", err)
		in.TreeProblem = machine.OneLine(err.Error())
		return
	}
	in.Tree = tree
}
