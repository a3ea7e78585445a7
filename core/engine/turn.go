package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// jobRun is one job being handled (a message, a command, a reminder), with what it keeps
// while it runs.
type jobRun struct {
	e      *Engine
	j      *job
	sess   core.Session // as last committed
	gate   turnGate     // see gate_audit.go
	leased bool         // this job holds the session's lease (see withLease)
	// done lists the mutating calls that ran in this job, so a conflict after them is
	// reported truthfully ("wrote NOTES.md, then ..."); told: the chat already knows.
	done []string
	told bool
	// checked is the executing plan as the last mutating call's recheck read it (nil
	// outside execution), whose run the call's changes are counted on (budget.go).
	checked *core.Plan
	// loaded is the current plan read with the session (version loadedAt), handed out
	// once by currentPlan: a plan changes only with a new session version.
	loaded   *core.Plan
	loadedAt int64
	deferred *core.Change // a plain message held back for the turn's first commit (deferred.go)
	draft    *draft       // the running turn's draft, nil without one (draft.go)
	// unstop is the executing plan with its Run.Stop cleared, for the first commit of a
	// turn a person's message started after a stop (see clearStop).
	unstop    *core.Plan
	unstopWas plan.Stop // the stop unstop clears
	// cleared is the stop the job's commit cleared: the effects of outcomes computed on the
	// plan before it do not show it again (carryOut).
	cleared *plan.Stop
	asked   []core.Requester // the people this job's work answers (Input.Asked)
	// secretCalls are the write calls of the model's last answer whose content holds a
	// secret, by call id (screenCalls): hidden in the transcript, refused by the gate.
	secretCalls map[string]secretCall
	// tokens are the usage of this job's model calls not committed yet (tokens.go).
	tokens plan.Tokens
}

// askedSoFar adds to t.asked the session's requesters as they stand before a plan tool
// (completing a plan clears them; a plan the same turn proposes next still answers them)
// and the author of the job's message when it is a message to the agent.
func (t *jobRun) askedSoFar() []core.Requester {
	t.asked = machine.WithRequesters(t.asked, t.sess.Requesters)
	if t.j.asks() {
		t.asked = machine.Asked(t.asked, senderKey(t.msg()), t.msg().Sender.Name)
	}
	return t.asked
}

func (t *jobRun) msg() core.Message { return t.j.msg }

// maxChainedTurns bounds how many agent turns one message can start back to back (an
// auto-approved plan starts executing right after it was proposed).
const maxChainedTurns = 4

// turn is one agent turn in progress. Its transcript entries are committed with the
// outcome of a plan tool, or by flush at the end of a round; never with an unrelated commit.
type turn struct {
	history  []core.ChatMessage // the stored transcript window
	seen     []core.ChatMessage // this turn's entries, in the order the model sees them
	unsaved  []core.ChatMessage // entries not committed yet
	drained  int                // injections of the session moved into the turn so far
	answered int                // model calls that returned
	lastErr  string             // the last tool error, to notice one repeated maxSame times
	sameErr  int
	maxSame  int         // agent.max_same_failure
	tokens   plan.Tokens // the turn's model calls, for its log line
}

func (tr *turn) add(m core.ChatMessage) {
	tr.seen = append(tr.seen, m)
	tr.unsaved = append(tr.unsaved, m)
}

// takeUnsaved hands the uncommitted entries to the commit that stores them.
func (tr *turn) takeUnsaved() []core.ChatMessage {
	out := tr.unsaved
	tr.unsaved = nil
	return out
}

// undrained removes the injections this turn moved into the transcript from the front of
// a session's queue (new ones may be behind them) and resets the count: the commit that
// carries their transcript entries also takes them off the queue.
func (tr *turn) undrained(queue []core.Injection) []core.Injection {
	n := min(tr.drained, len(queue))
	tr.drained = 0
	return append([]core.Injection(nil), queue[n:]...)
}

// runTurns runs agent turns under the session's lease (see underLease).
func (t *jobRun) runTurns(ctx context.Context) error { return t.underLease(ctx, t.leasedTurns) }

// underLease runs fn holding the session's lease, then the turns for work other processes
// left meanwhile. A process that finds the lease held queues its work on the session row
// for the holder (a person's message as an InjectMessage, see queued), so the holder looks
// for it once it has released the lease (moreWork): work stored before the release is
// seen then, work stored after it finds the lease free. A conflict does not stop the look:
// the change that won may be a decision whose turn was left to this process. Nor does a
// duplicate: the platform's redelivery of this very event to another process, which found
// the lease held and queued the text for this turn (with the event's key, so this turn's
// commit lost), is answered by the turn that takes the queued text in. A nested call runs
// fn under the outer call's lease, which looks.
func (t *jobRun) underLease(ctx context.Context, fn func(ctx context.Context) error) error {
	if t.leased {
		return fn(ctx)
	}
	err := t.withLease(ctx, fn)
	for { // each round needs work another process queued since the last: people write only so fast
		if errors.Is(err, core.ErrConflict) && !errors.Is(err, errRequeue) && t.j.sys == nil {
			t.conflictNotice(ctx) // before the turns that follow, as if the job had ended here
			t.told = true
		} else if err != nil && !errors.Is(err, core.ErrDuplicate) {
			return err
		}
		again, lerr := t.moreWork(ctx)
		if lerr != nil || !again {
			return cmp.Or(err, lerr)
		}
		err = t.withLease(ctx, func(ctx context.Context) error {
			// Read again now that the lease is this job's: another process may have run
			// the turn since moreWork looked.
			s, err := t.e.d.Store.Session(ctx, t.sess.ID)
			if err != nil {
				return fmt.Errorf("loading session %s: %w", t.sess.ID, err)
			}
			t.sess = s
			if len(s.Injections) == 0 {
				return nil
			}
			return t.leasedTurns(ctx)
		})
	}
}

// leasedTurns runs an agent turn, and another while the previous one left injections
// queued (an auto-approved plan, a message another process queued meanwhile): up to
// maxChainedTurns, and beyond that while a person's message waits (people write only so
// fast, and a turn never queues one).
func (t *jobRun) leasedTurns(ctx context.Context) error {
	for i := 1; ; i++ {
		t.gate.chained = i > 1 // only the first turn answers a person (see autoHeld)
		again, err := t.runTurn(ctx)
		t.sayBlocked(ctx)   // one notice for the turn's refused calls
		t.flushPending(ctx) // notices a flush did not take
		if err != nil || !again || (i >= maxChainedTurns && !personWaiting(t.sess.Injections)) {
			return err
		}
	}
}

// personWaiting reports whether a person's message is among the queued injections.
func personWaiting(queue []core.Injection) bool {
	return slices.ContainsFunc(queue, func(inj core.Injection) bool { return inj.Kind == core.InjectMessage })
}

// runTurn runs the agent loop (model call, tool round, commit) until a final text, a plan
// or question that ends the turn, a stop condition or agent.max_iterations. It reports
// whether injections are waiting for another turn.
func (t *jobRun) runTurn(ctx context.Context) (bool, error) {
	tr, err := t.loadTurn(ctx)
	if err != nil {
		return false, err
	}
	defer t.logTurnTokens(tr)
	t.planServersDown(ctx) // the plan's tools whose server is down: said with the first flush
	t.clearStop(ctx)
	t.draft = t.newDraft()
	defer func() { t.draft.close(context.WithoutCancel(ctx)); t.draft = nil }()
	for range t.e.cfg.MaxIterations {
		if why, ok := t.e.interrupted(t.sess); ok {
			return false, t.flush(ctx, tr, noticef("Stopped: %s came in.", why))
		}
		tr.drain(t.sess.Injections, t.e.d.Now())
		if h, over := t.overBudget(ctx); over {
			return false, t.halt(ctx, tr, h)
		}
		resp, err := t.callModel(ctx, tr)
		if err != nil && ctx.Err() != nil {
			// The turn was stopped (its lease could not be renewed, or a shutdown), not
			// refused by the model: the job's outcome says so (see outage.go).
			return false, fmt.Errorf("calling the model: the turn was stopped: %w", ctx.Err())
		}
		if err != nil {
			return false, t.modelFailed(ctx, tr, err)
		}
		tr.answered++
		resp.ToolCalls = t.screenCalls(resp.ToolCalls) // before anything stores them
		tr.add(core.ChatMessage{Role: core.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, At: t.e.d.Now()})
		if len(resp.ToolCalls) == 0 {
			var rs []core.Reply
			if strings.TrimSpace(resp.Text) != "" {
				rs = append(rs, core.Reply{Text: resp.Text, ReplaceID: t.draft.claim()})
			}
			if err := t.flush(ctx, tr, rs...); err != nil {
				return false, err
			}
			return len(t.sess.Injections) > 0, nil
		}
		if h, over := t.overBudget(ctx); over { // the answer spent it: its calls do not run
			tr.notRun(resp.ToolCalls, "the token budget is spent", t.e.d.Now())
			return false, t.halt(ctx, tr, h)
		}
		if err := t.commitDeferred(ctx); err != nil { // stored before a tool acts
			return false, err
		}
		r, err := t.toolRound(ctx, tr, resp.ToolCalls)
		if err != nil {
			return false, err
		}
		if r.stop.text != "" {
			return false, t.halt(ctx, tr, r.stop)
		}
		// Record this round before the next model call (lazily: no disk wait): a tool may
		// have changed the workspace, and a process killed now must not forget that, nor
		// hand the agent the same decision again.
		if err := t.flush(ctx, tr); err != nil {
			return false, err
		}
		if r.ended != "" {
			return len(t.sess.Injections) > 0, nil
		}
	}
	return false, t.halt(ctx, tr, halt{plan.StopMaxIterations, fmt.Sprintf("Stopped after %d model calls without finishing (agent.max_iterations). Send a message to let me continue.", t.e.cfg.MaxIterations)})
}

// clearStop readies the clearing of the executing plan's Run.Stop when a person's message
// starts this turn after a stop: Run.Stop says why the plan is stopped now, and it goes on
// now; the "stopped" audit row keeps the history. The cleared plan rides on the turn's
// first commit (commit, withUnstop). A plan that cannot be loaded keeps its stop.
func (t *jobRun) clearStop(ctx context.Context) {
	if t.sess.Phase != core.PhaseExecuting || !(t.j.asks() || personWaiting(t.sess.Injections)) {
		return
	}
	p, err := t.currentPlan(ctx)
	if err != nil || p == nil || p.Run.Stop == nil {
		return
	}
	cleared := *p
	t.unstopWas = *p.Run.Stop
	cleared.Run.Stop = nil
	cleared.UpdatedAt = t.e.d.Now()
	t.unstop = &cleared
}

// withUnstop puts the cleared plan into ch: a write of the same plan in ch that still
// carries the cleared stop loses it; one with a new stop (the turn stopped again) keeps
// that; without a write of the plan, the cleared one is added.
func (t *jobRun) withUnstop(ch core.Change) core.Change {
	u := t.unstop
	plans := make([]core.Plan, 0, len(ch.Plans)+1)
	found := false
	for _, p := range ch.Plans {
		if p.ID == u.ID {
			found = true
			if p.Run.Stop != nil && *p.Run.Stop == t.unstopWas {
				p.Run.Stop = nil
			}
		}
		plans = append(plans, p)
	}
	if !found {
		plans = append(plans, *u)
	}
	ch.Plans = plans
	return ch
}

// halt is a stop condition of a turn: the notice the chat gets and, when a condition of
// the accepted plan caused it, its kind; a stop without one (a person's message came in)
// is not the plan's.
type halt struct {
	kind plan.StopKind
	text string
}

// halt ends the turn with the stop h: its notice, and for a stop of the executing plan
// its record on the plan version (Run.Stop) and an audit row, in the same commit.
func (t *jobRun) halt(ctx context.Context, tr *turn, h halt) error {
	if h.kind == "" || t.sess.Phase != core.PhaseExecuting {
		return t.flush(ctx, tr, noticef("%s", h.text))
	}
	p, err := t.currentPlan(ctx)
	if err != nil || p == nil {
		return errors.Join(err, t.flush(ctx, tr, noticef("%s", h.text)))
	}
	now := t.e.d.Now()
	stopped := *p
	stopped.Tokens = p.Tokens.Add(t.tokens) // with this turn's calls, which its commit adds
	stopped.Run.Stop = &plan.Stop{Kind: h.kind, Message: h.text, At: now}
	stopped.UpdatedAt = now
	var rs []core.Reply
	if reported, report, ok := t.reportOn(context.WithoutCancel(ctx), stopped); ok {
		stopped, rs = reported, []core.Reply{report}
	}
	rs = append(rs, noticef("%s", h.text))
	ch := core.Change{Plans: []core.Plan{stopped}, Events: []core.Event{{
		PlanID: p.ID, PlanVersion: p.Version, Kind: core.EventStopped, Actor: core.AgentActor,
		Channel: t.sess.Address.Channel, Detail: string(h.kind) + ": " + h.text, At: now}}}
	if err := t.flushWith(ctx, tr, ch, rs...); err != nil {
		return err
	}
	t.showPlan(stopped)
	return nil
}

// showPlan rewrites the plan file and the workspace copy of p, a version committed outside
// an outcome (a stop recorded or cleared), so they say what the store says.
func (t *jobRun) showPlan(p core.Plan) {
	t.e.files.refresh(t.sess, p)
	if t.e.cfg.WorkspaceCopy && t.e.cfg.PlanMode {
		t.e.copyPlan(t.sess, p)
	}
}

func noticef(format string, args ...any) core.Reply {
	return core.Reply{Kind: core.ReplyNotice, Text: fmt.Sprintf(format, args...)}
}

// loadTurn reads the transcript window the model gets as history.
func (t *jobRun) loadTurn(ctx context.Context) (*turn, error) {
	h, err := t.window(ctx)
	if err != nil {
		return nil, err
	}
	if d := t.deferred; d != nil { // the message held back for this turn's first commit
		m, exact := storedForms(d.Messages)
		if !exact {
			m = d.Messages
		}
		// One copy of the window, of the size it needs (h is the kept window, clipped).
		h = append(append(make([]core.ChatMessage, 0, len(h)+len(m)), h...), m...)
		h = clipWindow(h, t.e.cfg.HistoryMessages)
	}
	return &turn{history: slices.Clip(sanitizeHistory(trimHistory(h, t.e.cfg.HistoryChars))), maxSame: t.e.cfg.MaxSameFailure}, nil
}

// window is the session's stored transcript window: kept in memory for the session's
// current row version (see windows.go), else read from the store.
func (t *jobRun) window(ctx context.Context) ([]core.ChatMessage, error) {
	now := t.e.d.Now()
	if h, ok := t.e.windows.get(t.sess.ID, t.sess.Version, now); ok {
		return h, nil
	}
	h, err := t.e.d.Store.Transcript(ctx, t.sess.ID, t.e.cfg.HistoryMessages)
	if err != nil {
		return nil, fmt.Errorf("loading transcript: %w", err)
	}
	t.e.windows.put(t.sess.ID, t.sess.Version, h, now)
	return h, nil
}

// drain moves the session's queued injections that are not in the turn yet into it.
func (tr *turn) drain(queue []core.Injection, now time.Time) {
	for _, inj := range queue[tr.drained:] {
		name := "plangate"
		if inj.Kind == core.InjectMessage {
			name = inj.Name
		}
		tr.add(core.ChatMessage{Role: core.RoleUser, Name: name, Content: inj.Text, At: now})
	}
	tr.drained = len(queue)
}

// callModel asks the model for the next step of the turn.
func (t *jobRun) callModel(ctx context.Context, tr *turn) (core.ModelResponse, error) {
	e := t.e
	pinned, progress := t.pinnedPlan(ctx)
	msgs := turnWindow(tr, e.cfg.HistoryChars)
	if progress != "" { // last: it changes with every step, all before it stays the same
		msgs = append(slices.Clip(msgs), core.ChatMessage{Role: core.RoleUser, Name: core.ProgressName, Content: progress})
	}
	req := core.ModelRequest{
		SessionID: t.sess.ID,
		Planning:  t.sess.Phase == core.PhasePlanning || t.sess.Phase == core.PhaseAwaitingApproval,
		System:    e.systemPrompt(t.sess) + pinned,
		Messages:  msgs,
		Tools:     e.toolSpecs(),
	}
	stopTyping := e.typingSoon(ctx, t.sess.Address)
	start := time.Now() // real time, not the injected clock: this is latency
	var resp core.ModelResponse
	var err error
	if sm, ok := e.d.Model.(core.Streamer); ok && t.draft != nil {
		resp, err = sm.CompleteStream(ctx, req, func(text string) { t.draft.text(ctx, text) })
	} else {
		resp, err = e.d.Model.Complete(ctx, req)
	}
	stopTyping()
	e.observeModel(start, resp, err)
	if err == nil {
		t.counted(tr, t.sess.Phase, resp.Usage)
	}
	if req.Planning && err == nil {
		e.noteFallback(t.sess.ID, resp.Fallback)
	}
	return resp, err
}

// pinnedPlan is, for an executing turn (empty outside execution), the accepted plan's
// pinned contract for the system prompt and where its steps stand (plan.Progress) for the
// request's last message: the contract is the same for the whole execution, so the
// prompt's prefix up to the newest history stays what the server cached, and only the
// progress moves to the end. Read from the store each model call, so a step that
// update_plan just moved shows on the next call: one plan row read per call, during
// execution only. A plan that cannot be loaded pins nothing; the gate refuses writes then.
func (t *jobRun) pinnedPlan(ctx context.Context) (pinned, progress string) {
	if !t.e.cfg.PlanMode || t.sess.Phase != core.PhaseExecuting {
		return "", ""
	}
	p, err := t.currentPlan(ctx)
	if err != nil || p == nil {
		return "", ""
	}
	return "\n\n" + plan.Pinned(p.Version, p.Body), plan.Progress(p.Version, p.Body)
}

// turnWindow is what the model sees: the loaded history and this turn's entries, within
// the character budget as tool results pile up (oldest first out; calls and results
// stay paired).
func turnWindow(tr *turn, budget int) []core.ChatMessage {
	msgs := tr.history // already sanitized (loadTurn); clipped, so not appended into
	if len(tr.seen) > 0 {
		msgs = append(slices.Clip(tr.history), tr.seen...)
	}
	return sanitizeHistory(trimHistory(msgs, budget))
}

// modelFailed tells the chat that the model could not answer. What the turn did is kept;
// if it did nothing, drained injections stay queued for the next turn.
func (t *jobRun) modelFailed(ctx context.Context, tr *turn, err error) error {
	t.e.d.Log.Warn("model call failed", "session", t.sess.ID, "err", err)
	if len(t.sess.Injections) > 0 || tr.answered > 0 {
		// A decision or earlier work stands; the agent just could not go on.
		t.notice(ctx, "The model could not answer: %s. What was decided stands; send a message (e.g. \"continue\") to let the agent go on.", machine.OneLine(err.Error()))
	} else {
		t.notice(ctx, "The model could not answer: %s. Nothing changed; send your message again to retry.", machine.OneLine(err.Error()))
	}
	if tr.answered > 0 {
		return t.flush(ctx, tr)
	}
	tr.unsaved = nil
	return nil
}

// flush commits the turn's uncommitted entries, takes drained injections off the queue and
// queues rs (the agent's answer, a stop notice) as outbox rows of the same commit. Nothing
// a person decided is in it, so it need not wait for the disk.
func (t *jobRun) flush(ctx context.Context, tr *turn, rs ...core.Reply) error {
	return t.flushWith(ctx, tr, core.Change{}, rs...)
}

// flushWith is flush committing the plans and events of extra too; with any it waits for
// the disk, since it records more than the transcript.
func (t *jobRun) flushWith(ctx context.Context, tr *turn, extra core.Change, rs ...core.Reply) error {
	if pending := t.takeNotices(); len(pending) > 0 { // the gate's notices come first
		rs = append(pending, rs...)
	}
	recorded := len(extra.Plans) > 0 || len(extra.Events) > 0
	if len(tr.unsaved) == 0 && tr.drained == 0 && !recorded {
		return t.post(ctx, rs...)
	}
	drained := tr.drained
	next := t.sess
	next.Injections = tr.undrained(next.Injections)
	next.UpdatedAt = t.e.d.Now()
	ch := t.withRows(core.Change{Session: &next, Messages: tr.takeUnsaved(), Plans: extra.Plans, Events: extra.Events, Lazy: !recorded}, rs)
	err := t.commit(ctx, ch)
	if errors.Is(err, core.ErrConflict) {
		if rebased, ok := t.rebase(ctx, drained); ok {
			ch.Session = &rebased
			err = t.commit(ctx, ch)
		}
	}
	if err != nil {
		if ns := notices(rs); len(ns) > 0 && errors.Is(err, core.ErrConflict) {
			// A notice is still true (a stop notice says what ran). The agent's answer is
			// not said: its entries were not stored, and the text its model call answered
			// may have been answered by another process's turn meanwhile, or is answered
			// by the next turn.
			_ = t.post(ctx, ns...)
		}
		return err
	}
	t.sayCommitted(ctx, ch)
	return nil
}

// notices are the replies of rs that are plangate's notices, not the agent's answers.
func notices(rs []core.Reply) []core.Reply {
	var out []core.Reply
	for _, r := range rs {
		if r.Kind == core.ReplyNotice {
			out = append(out, r)
		}
	}
	return out
}

// rebase puts a flush on top of a session row another process changed meanwhile when that
// change decided nothing (a person's message it queued for this turn's process, injections
// queued behind ours): the flush's entries answer what the turn saw, and the queued work
// stays queued for the next turn, after them. Any other change stays a conflict.
func (t *jobRun) rebase(ctx context.Context, drained int) (core.Session, bool) {
	s, err := t.e.d.Store.Session(ctx, t.sess.ID)
	if err != nil {
		return core.Session{}, false
	}
	cur := t.sess
	if s.Phase != cur.Phase || s.PlanID != cur.PlanID || s.ApprovalID != cur.ApprovalID ||
		(s.Question == nil) != (cur.Question == nil) || s.AutoApprove != cur.AutoApprove ||
		len(s.Injections) < drained || !slices.Equal(s.Injections[:drained], cur.Injections[:drained]) {
		return core.Session{}, false
	}
	next := s
	next.Injections = append([]core.Injection(nil), s.Injections[drained:]...)
	next.Requesters = machine.WithRequesters(s.Requesters, cur.Requesters) // a held-back message's author
	next.UpdatedAt = t.e.d.Now()
	return next, true
}

// round is what one tool round ended with.
type round struct {
	ended string // the tool that ended the turn
	stop  halt   // a stop condition to report
}

// toolRound runs the tool calls of one model answer, in order; after a call that ends the
// turn or stops it, the rest are answered without running.
func (t *jobRun) toolRound(ctx context.Context, tr *turn, calls []core.ToolCall) (round, error) {
	var r round
	for _, call := range calls {
		var res toolResult
		switch {
		case r.ended != "":
			res = toolResult{content: "not run: the turn ended with " + r.ended}
		case r.stop.text != "":
			res = toolResult{content: "not run: the turn was stopped"}
		default:
			if why, ok := t.e.interrupted(t.sess); ok {
				r.stop = halt{text: "Stopped: " + why + " came in."}
				res = toolResult{content: "not run: the user interrupted"}
				break
			}
			t.draft.status(ctx, call)
			res = t.callTool(ctx, call)
			res.content = truncateResult(res.content, t.e.cfg.ToolResultChars)
		}
		tr.add(core.ChatMessage{Role: core.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.content, At: t.e.d.Now()})
		if res.outcome != nil {
			if err := t.applyTool(ctx, tr, *res.outcome); err != nil {
				return r, err
			}
		}
		tr.note(&r, call.Name, res)
	}
	return r, nil
}

// applyTool commits a plan tool's outcome in one transaction with the turn's uncommitted
// entries (the call and its result included), then carries it out. callTool wrote the
// tool's files already: its result depends on them.
func (t *jobRun) applyTool(ctx context.Context, tr *turn, o machine.Outcome) error {
	if o.Change.Session == nil {
		return t.carryOut(ctx, o)
	}
	next := *o.Change.Session
	next.Injections = tr.undrained(next.Injections)
	o.Change.Session = &next
	o.Change.Messages = append(tr.takeUnsaved(), o.Change.Messages...)
	t.queueReplies(ctx, &o)
	if err := t.commit(ctx, o.Change); err != nil {
		return err
	}
	return t.carryOut(ctx, o)
}

// note updates the round's stop conditions after one call: the same tool error maxSame
// times in a row (agent.max_same_failure) stops the turn.
func (tr *turn) note(r *round, name string, res toolResult) {
	if res.isError {
		if res.content == tr.lastErr {
			tr.sameErr++
		} else {
			tr.lastErr, tr.sameErr = res.content, 1
		}
		if tr.sameErr >= max(tr.maxSame, 1) && r.stop.text == "" {
			r.stop = halt{plan.StopRepeatedFailure, fmt.Sprintf("Stopped: the same tool error happened %s in a row (%s). Send a message to let me try another way.",
				timesInWords(tr.sameErr), machine.OneLine(strings.TrimPrefix(res.content, "error: ")))}
		}
	} else if r.ended == "" && r.stop.text == "" {
		tr.lastErr, tr.sameErr = "", 0
	}
	if res.stop.text != "" && r.stop.text == "" {
		r.stop = res.stop
	}
	if res.endTurn && r.ended == "" {
		r.ended = name
	}
}

// timesInWords says how often: "twice", "three times", "7 times".
func timesInWords(n int) string {
	if w, ok := map[int]string{1: "once", 2: "twice", 3: "three times", 4: "four times", 5: "five times"}[n]; ok {
		return w
	}
	return fmt.Sprintf("%d times", n)
}
