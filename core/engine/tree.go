package engine

import (
	"context"
	"errors"
	"fmt"

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
	accept := tr == machine.TrigAccept
	var problem error
	switch {
	case tr == machine.TrigPropose, tr == machine.TrigAutoPropose, tr == machine.TrigEdit:
	case accept && cur != nil && cur.Status == core.PlanPending && cur.Run.Tree != nil:
		// Without the recorded list the check cannot be made; --stale still records
		// the workspace it accepts as the baseline.
		problem = t.e.loadTree(ctx, cur.Run.Tree)
	default:
		return
	}
	tree, err := t.fingerprint(ctx)
	if err == nil && (!accept || (in.Stale && tree != nil && (problem != nil || tree.Hash != cur.Run.Tree.Hash))) {
		err = t.e.saveTree(ctx, tree) // the new version's, or the baseline of a --stale acceptance
	}
	if err = errors.Join(problem, err); err != nil {
		t.e.d.Log.Warn("fingerprinting the workspace", "session", t.sess.ID, "trigger", tr, "err", err)
		in.TreeProblem = machine.OneLine(err.Error())
		if problem == nil {
			return
		}
	}
	in.Tree = tree
}

// A fingerprint's file list is kept in the store's key-value state under the tree's hash,
// not in the plan row the run is part of (see plan.Tree).
const (
	treeStateChannel = "plangate"
	treeStateAccount = "trees"
)

// lazyState is the store's write that does not wait for the disk (store.Store has it): a
// file list is only worth a sync with the commit that refers to it, which comes next.
type lazyState interface {
	SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error
}

// saveTree keeps tree's file list by its hash.
func (e *Engine) saveTree(ctx context.Context, tree *plan.Tree) error {
	if tree == nil || tree.Count == 0 {
		return nil
	}
	if l, ok := e.d.Store.(lazyState); ok {
		return l.SetChannelStateLazy(ctx, treeStateChannel, treeStateAccount, tree.Hash, tree.Packed)
	}
	return e.d.Store.SetChannelState(ctx, treeStateChannel, treeStateAccount, tree.Hash, tree.Packed)
}

// dropTree forgets the file list of tree, which nothing refers to any more.
func (e *Engine) dropTree(ctx context.Context, tree *plan.Tree) {
	if tree == nil || tree.Count == 0 {
		return
	}
	if l, ok := e.d.Store.(lazyState); ok {
		_ = l.SetChannelStateLazy(ctx, treeStateChannel, treeStateAccount, tree.Hash, "")
		return
	}
	_ = e.d.Store.SetChannelState(ctx, treeStateChannel, treeStateAccount, tree.Hash, "")
}

// loadTree puts tree's file list back from the store, when it is not loaded.
func (e *Engine) loadTree(ctx context.Context, tree *plan.Tree) error {
	if tree == nil || tree.Count == 0 || tree.Packed != "" {
		return nil
	}
	v, ok, err := e.d.Store.ChannelState(ctx, treeStateChannel, treeStateAccount, tree.Hash)
	switch {
	case err != nil:
		return fmt.Errorf("loading a fingerprint's file list: %w", err)
	case !ok || v == "":
		return fmt.Errorf("the file list of fingerprint %.12s is missing", tree.Hash)
	}
	tree.Packed = v
	return nil
}
