package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// The executing plan watched through the workspace (docs/design.md §13): around each
// mutating call of a version whose acceptance recorded a fingerprint, the workspace is
// fingerprinted before and after. Before: a change since the previous call's "after" is
// one the agent did not make (workspace_drifted), and a version that went over its budget
// runs nothing more. After: the files the call changed are added to the version's
// Run.Changed, and the budget (scope.max_files_changed, max_lines_changed) is checked.
// Each costs a fingerprint (docs/performance.md: about 35 ms for 2,000 files).

// watch is what watchBefore saw, for watchAfter: the plan and the workspace before the call.
type watch struct {
	p      *core.Plan
	f      core.Fingerprinter
	before *plan.Tree
	call   string // the call in words, for the report
}

// watchBefore checks the workspace before a mutating call of the executing plan. ok is
// false when the call must not run; res then says why (and stops the turn for a budget or
// a drift).
func (t *jobRun) watchBefore(ctx context.Context, call core.ToolCall) (watch, toolResult, bool) {
	p := t.checked
	f, ok := t.e.d.Tools.(core.Fingerprinter)
	if p == nil || !ok || p.Run.Base() == nil {
		return watch{}, toolResult{}, true
	}
	what := describeCall(call.Name, call.Args)
	if ch := p.Run.Changed; ch != nil && ch.Exceeded != "" {
		msg := fmt.Sprintf("plan v%d already went over its budget (%s)", p.Version, changedWords(p.Body.Scope, ch))
		return watch{}, toolResult{content: "error: " + call.Name + " was not run: " + msg + "; a new version is needed", isError: true,
			stop: halt{ch.Exceeded, fmt.Sprintf("Stopped: %s; %s was not run. Going on needs a new version: /plan revise <feedback>.", msg, what)}}, false
	}
	before, err := f.Fingerprint(ctx, t.e.workspace(t.sess))
	if err != nil {
		t.e.d.Log.Error("fingerprinting the workspace", "session", t.sess.ID, "err", err)
		return watch{}, toolError("%s was not run: plangate could not look at the workspace first (%v)", call.Name, err), false
	}
	last := p.Run.Last()
	if err := t.e.loadTree(ctx, last); err != nil {
		t.e.d.Log.Error("loading the workspace's fingerprint", "session", t.sess.ID, "err", err)
		return watch{}, toolError("%s was not run: plangate could not read what it recorded of the workspace (%v)", call.Name, err), false
	}
	c, err := plan.CompareTrees(last, before)
	if err != nil {
		t.e.d.Log.Error("comparing fingerprints", "session", t.sess.ID, "err", err)
	}
	if err == nil && !c.Empty() {
		// A person's go-ahead continues from the workspace as it is now.
		ch := changedOf(p)
		ch.Last = before
		ch.Outside = addNew(ch.Outside, c.Paths())
		t.saveChanged(ctx, p, ch, true)
		since := "since the plan was accepted"
		if p.Run.Changed != nil {
			since = "since my last change"
		}
		msg := fmt.Sprintf("the workspace changed outside my calls %s (%s)", since, c.Words(3))
		return watch{}, toolResult{content: "error: " + call.Name + " was not run: " + msg + "; a person has been asked to look", isError: true,
			stop: halt{plan.StopWorkspaceDrifted, fmt.Sprintf("Stopped: %s; %s was not run. Check the change, then send a message to let me go on, or /plan revise <feedback>.", msg, what)}}, false
	}
	return watch{p: p, f: f, before: before, call: what}, toolResult{}, true
}

// watchAfter counts what the call changed on the plan's run and returns the budget's stop
// when the changes went over it (the zero halt otherwise).
func (t *jobRun) watchAfter(ctx context.Context, w watch) halt {
	if w.p == nil {
		return halt{}
	}
	p := w.p
	after, err := w.f.Fingerprint(context.WithoutCancel(ctx), t.e.workspace(t.sess))
	if err != nil {
		t.e.d.Log.Error("fingerprinting the workspace", "session", t.sess.ID, "err", err)
		return halt{}
	}
	c, err := plan.CompareTrees(w.before, after)
	if err != nil {
		t.e.d.Log.Error("comparing fingerprints", "session", t.sess.ID, "err", err)
		return halt{}
	}
	ch := changedOf(p)
	ch.Paths = addNew(ch.Paths, c.Paths())
	ch.Files, ch.Last = len(ch.Paths), after
	if len(c.Files) > 0 {
		ch.Calls = append(ch.Calls, plan.CallChange{Step: inProgress(p.Body.Steps), Call: w.call,
			Files: t.lineCounts(ctx, w.f, w.before, after, c.Files)})
	}
	sc := p.Body.Scope
	if sc.MaxLinesChanged > 0 && len(c.Files) > 0 {
		err := t.e.loadTree(ctx, p.Run.Base())
		if err == nil {
			ch.Lines, err = w.f.LinesChanged(context.WithoutCancel(ctx), p.Run.Base(), after, ch.Paths)
		}
		if err != nil {
			t.e.d.Log.Error("counting changed lines", "session", t.sess.ID, "err", err)
		}
	}
	var stop halt
	switch {
	case sc.MaxFilesChanged > 0 && ch.Files > sc.MaxFilesChanged:
		ch.Exceeded = plan.StopMaxFilesChanged
		stop = halt{ch.Exceeded, fmt.Sprintf("Stopped: %d files changed (%s), plan v%d allows %d (scope.max_files_changed). Its further changes are refused; going on needs a new version: /plan revise <feedback>.",
			ch.Files, plan.NameSome(ch.Paths, 3), p.Version, sc.MaxFilesChanged)}
	case sc.MaxLinesChanged > 0 && ch.Lines > sc.MaxLinesChanged:
		ch.Exceeded = plan.StopMaxLinesChanged
		stop = halt{ch.Exceeded, fmt.Sprintf("Stopped: %d lines changed, plan v%d allows %d (scope.max_lines_changed). Its further changes are refused; going on needs a new version: /plan revise <feedback>.",
			ch.Lines, p.Version, sc.MaxLinesChanged)}
	}
	t.saveChanged(ctx, p, ch, len(c.Files) > 0 || c.HeadFrom != c.HeadTo)
	return stop
}

// changedOf is a copy of p's Run.Changed to update (a new one before the first call).
func changedOf(p *core.Plan) *plan.Changed {
	if p.Run.Changed == nil {
		return &plan.Changed{}
	}
	ch := *p.Run.Changed
	ch.Paths = slices.Clone(ch.Paths)
	ch.Calls = slices.Clone(ch.Calls)
	ch.Outside = slices.Clone(ch.Outside)
	return &ch
}

// addNew appends to list the paths it does not hold yet.
func addNew(list, paths []string) []string {
	for _, path := range paths {
		if !slices.Contains(list, path) {
			list = append(list, path)
		}
	}
	return list
}

// lineCounts counts the lines added and removed in each of files from tree a to tree b;
// when they cannot be counted (no baselines kept) the files are listed uncounted.
func (t *jobRun) lineCounts(ctx context.Context, f core.Fingerprinter, a, b *plan.Tree, files []plan.FileChange) []plan.FileLines {
	paths := make([]string, len(files))
	for i, fc := range files {
		paths[i] = fc.Path
	}
	counts, err := f.LineCounts(context.WithoutCancel(ctx), a, b, paths)
	if err == nil && len(counts) == len(files) {
		return counts
	}
	if err != nil {
		t.e.d.Log.Warn("counting a call's changed lines", "session", t.sess.ID, "err", err)
	}
	out := make([]plan.FileLines, len(files))
	for i, fc := range files {
		out[i] = plan.FileLines{Path: fc.Path, Kind: fc.Kind}
	}
	return out
}

// inProgress is the id of the step in progress among steps, "" when none is.
func inProgress(steps []plan.Step) string {
	for _, s := range steps {
		if s.Status == plan.StepInProgress {
			return s.ID
		}
	}
	return ""
}

// saveChanged records ch on plan p, with the session's compare-and-set: a decision made
// meanwhile elsewhere (which moves the session row) wins, and the count is dropped with it.
// newLast says ch.Last is a new tree, whose file list is kept first; the one it replaces
// is dropped once the commit refers to the new one, unless it is the baseline. It returns
// the plan as recorded, nil when it was not.
func (t *jobRun) saveChanged(ctx context.Context, p *core.Plan, ch *plan.Changed, newLast bool) *core.Plan {
	ctx = context.WithoutCancel(ctx)
	var old *plan.Tree
	if p.Run.Changed != nil {
		old = p.Run.Changed.Last
	}
	if old != nil && ch.Last != nil && old.Hash == ch.Last.Hash {
		newLast = false
	}
	if newLast {
		if err := t.e.saveTree(ctx, ch.Last); err != nil {
			t.e.d.Log.Warn("keeping the workspace's fingerprint", "session", t.sess.ID, "err", err)
			return nil
		}
	}
	now := t.e.d.Now()
	np := *p
	np.Run.Changed, np.UpdatedAt = ch, now
	next := t.sess
	next.UpdatedAt = now
	if err := t.commit(ctx, core.Change{Session: &next, Plans: []core.Plan{np}, Lazy: true}); err != nil {
		t.e.d.Log.Warn("recording the plan's changes", "session", t.sess.ID, "err", err)
		return nil
	}
	t.checked = &np
	if newLast && old != nil && old.Hash != p.Run.Base().Hash {
		t.e.dropTree(ctx, old)
	}
	return &np
}

// changedWords is the count against the budget: "2 of 3 files, 40 of 100 lines changed".
func changedWords(sc plan.Scope, ch *plan.Changed) string {
	files, lines := 0, 0
	if ch != nil {
		files, lines = ch.Files, ch.Lines
	}
	return plan.ChangedWords(sc, files, lines)
}
