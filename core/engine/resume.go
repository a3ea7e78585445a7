package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// resumeWindow bounds how old an unanswered message may be for Resume to answer it: after
// a long outage, a reply to a stale question would surprise more than help.
const resumeWindow = time.Hour

// InjectRestart tells the agent its turn was cut off by a restart.
const InjectRestart core.InjectionKind = "RESTART"

// Resume picks up work that a killed process left unfinished: a session with injections
// still queued (the turn a committed decision started never ran), one whose newest
// transcript entry is a person's recent unanswered message, and one whose turn did not end
// (its lease was left behind) get a turn. A mutating call that started and never finished
// is reported to the agent and the chat, never run again. A session whose lease another
// process holds is left to it, and taken over if that lease expires unreleased. only
// selects the sessions this process serves (nil = all). Resume returns how many sessions
// it picked up, once their turns have run.
func (e *Engine) Resume(ctx context.Context, only func(core.Session) bool) (int, error) {
	wait, err := e.StartResume(ctx, only)
	if err != nil {
		return 0, err
	}
	return wait(), nil
}

// StartResume is Resume in two steps: it queues the resumed turns at once, so that a
// message received after it returns runs after them (an unanswered message is answered
// before the next one, not overtaken). wait blocks until those turns have run and reports
// how many there were. Call it before the channels start receiving.
func (e *Engine) StartResume(ctx context.Context, only func(core.Session) bool) (wait func() int, err error) {
	ss, err := e.d.Store.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing sessions to resume: %w", err)
	}
	var dones []<-chan error
	var ids []string
	for _, s := range ss {
		if only != nil && !only(s) {
			continue
		}
		lease, leftover := e.foreignLease(ctx, s.ID)
		if leftover && e.live(lease) {
			e.resumeLater(ctx, s.ID, only, lease.ExpiresAt)
			continue
		}
		last, err := e.lastEntry(ctx, s)
		if err != nil {
			return nil, err
		}
		if !needsTurn(s, last, e.d.Now()) && !leftover {
			continue
		}
		dones = append(dones, e.resumeOne(ctx, s.ID, leftover))
		ids = append(ids, s.ID)
	}
	return func() int {
		for i, done := range dones {
			if err := waitJob(ctx, done); err != nil {
				e.d.Log.Error("resuming session", "session", ids[i], "err", err)
			}
		}
		return len(dones)
	}, nil
}

// resumeLater retries one session once another process's lease on it has expired: a live
// holder keeps renewing, a dead one's lease lapses and its work is taken over.
func (e *Engine) resumeLater(ctx context.Context, sessionID string, only func(core.Session) bool, until time.Time) {
	wait := min(max(until.Sub(e.d.Now()), time.Second), e.cfg.LeaseTTL) + 100*time.Millisecond
	e.d.Log.Info("session busy in another process; checking again when its lease ends", "session", sessionID, "in", wait)
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		_, err := e.Resume(ctx, func(s core.Session) bool { return s.ID == sessionID && (only == nil || only(s)) })
		if err != nil && ctx.Err() == nil {
			e.d.Log.Error("resuming session", "session", sessionID, "err", err)
		}
	}()
}

// resumeOne runs the resumed turn of one session under its lease. leftover: a lease of
// another process was found, so a turn may have been cut off.
func (e *Engine) resumeOne(ctx context.Context, sessionID string, leftover bool) <-chan error {
	return e.systemAsync(ctx, sessionID, func(ctx context.Context, t *jobRun) error {
		err := t.underLease(ctx, func(ctx context.Context) error { return t.resumeWork(ctx, leftover, true) })
		if err == errLeaseHeld {
			return nil
		}
		return err
	})
}

// resumeWork runs the resumed turn of t's session, under its lease, when it was left with
// work. restarted: a restart cut the work off, which the chat is told; otherwise (a store
// outage, see carryOn) the chat is told only of tool runs that were cut off.
func (t *jobRun) resumeWork(ctx context.Context, leftover, restarted bool) error {
	e := t.e
	last, err := e.lastEntry(ctx, t.sess)
	if err != nil {
		return err
	}
	runs, err := t.interruptedRuns(ctx)
	if err != nil {
		return err
	}
	if !resumeTurn(needsTurn(t.sess, last, e.d.Now()), leftover, len(runs) > 0, endedTurn(t.sess, last)) {
		return nil
	}
	if restarted || len(runs) > 0 {
		if err := t.tellRestart(ctx, runs); err != nil {
			return err
		}
	}
	return t.runTurns(ctx)
}

// resumeTurn decides whether a session gets its resumed turn, once its lease is held:
// need (it was left with work, see needsTurn), leftover (another process's lease was
// found), interrupted (tool runs were cut off), ended (its last turn visibly ended).
func resumeTurn(need, leftover, interrupted, ended bool) bool {
	switch {
	case leftover && !need && !interrupted && ended:
		return false // killed after the turn ended, before it let go of the lease
	case !need && !leftover && !interrupted:
		return false // someone was quicker
	}
	return true
}

// endedTurn reports whether the session's last turn visibly ended: it waits for a
// person's decision or answer, or its newest transcript entry (last) is the agent's final
// answer.
func endedTurn(s core.Session, last []core.ChatMessage) bool {
	if s.Phase == core.PhaseAwaitingApproval || s.Question != nil {
		return true
	}
	return len(last) == 0 || (last[0].Role == core.RoleAssistant && len(last[0].ToolCalls) == 0)
}

// interruptedRuns closes the session's runs that started and never finished as
// interrupted, and returns them.
func (t *jobRun) interruptedRuns(ctx context.Context) ([]core.ToolRun, error) {
	runs, err := t.e.d.Store.UnfinishedToolRuns(ctx, t.sess.ID)
	if err != nil {
		return nil, fmt.Errorf("listing interrupted tool runs: %w", err)
	}
	for i := range runs {
		runs[i].Outcome, runs[i].FinishedAt = ToolRunInterrupted, t.e.d.Now()
		if err := t.e.d.Store.FinishToolRun(ctx, runs[i]); err != nil {
			return nil, fmt.Errorf("closing interrupted tool run: %w", err)
		}
	}
	return runs, nil
}

// tellRestart tells the chat (an outbox row) and the agent (an injection its resumed turn
// reads) what the restart cut off, in one commit.
func (t *jobRun) tellRestart(ctx context.Context, runs []core.ToolRun) error {
	cur, err := t.currentPlan(ctx)
	if err != nil {
		return err
	}
	chat, note := restartNotice(t.sess, cur, runs)
	if note == nil {
		return t.post(ctx, chat)
	}
	next := t.sess
	next.Injections = append(append([]core.Injection(nil), next.Injections...), *note)
	next.UpdatedAt = t.e.d.Now()
	return t.commitSaying(ctx, core.Change{Session: &next}, chat)
}

// restartNotice is what a resumed turn tells the chat, and the injection that tells the
// agent (nil when the agent need not know: nothing of its was cut off).
func restartNotice(s core.Session, cur *core.Plan, runs []core.ToolRun) (core.Reply, *core.Injection) {
	var chat, agent []string
	if s.Phase == core.PhaseExecuting && cur != nil && cur.Status == core.PlanAccepted {
		step := stepToContinue(*cur)
		chat = append(chat, fmt.Sprintf("plangate restarted while working on plan v%d; continuing with step %d.", cur.Version, step))
		agent = append(agent, fmt.Sprintf("plangate restarted while you were carrying out plan v%d %q; your turn was cut off. Continue with step %d; check the workspace before redoing anything.",
			cur.Version, cur.Body.Title, step))
	} else {
		chat = append(chat, "plangate restarted: picking up where it stopped.")
	}
	for _, r := range runs {
		chat = append(chat, interruptedText(r))
		agent = append(agent, interruptedText(r)+" It is not run again; look at the workspace to see what it did.")
	}
	if len(agent) == 0 {
		return noticef("%s", chat[0]), nil
	}
	return noticef("%s", strings.Join(chat, " ")),
		&core.Injection{Kind: InjectRestart, Text: "[" + string(InjectRestart) + "]: " + strings.Join(agent, " ")}
}

// stepToContinue is the number of the first step of p that is neither completed nor cancelled.
func stepToContinue(p core.Plan) int {
	for i, s := range p.Body.Steps {
		if s.Status != plan.StepCompleted && s.Status != plan.StepCancelled {
			return i + 1
		}
	}
	return len(p.Body.Steps)
}

// lastEntry reads the newest transcript entry of s, which needsTurn and endedTurn judge.
func (e *Engine) lastEntry(ctx context.Context, s core.Session) ([]core.ChatMessage, error) {
	last, err := e.d.Store.Transcript(ctx, s.ID, 1)
	if err != nil {
		return nil, fmt.Errorf("reading the transcript of %s: %w", s.ID, err)
	}
	return last, nil
}

// needsTurn reports whether a killed process left s with work: injections still queued,
// or a person's message (its newest transcript entry, last) under resumeWindow old that
// was never answered.
func needsTurn(s core.Session, last []core.ChatMessage, now time.Time) bool {
	if len(s.Injections) > 0 {
		return true
	}
	if len(last) != 1 || last[0].Role != core.RoleUser {
		return false
	}
	return now.Sub(last[0].At) < resumeWindow
}

// moreWork reports, once the lease is released, whether another process queued work for
// this session meanwhile (a person's message, or injections a decision queued) and could
// not start a turn for it: this process held the lease. Every queued message comes with a
// new row version, so at the version this job last committed or read nobody queued any.
func (t *jobRun) moreWork(ctx context.Context) (bool, error) {
	s, err := t.e.d.Store.Session(ctx, t.sess.ID)
	if err != nil {
		return false, fmt.Errorf("loading session %s: %w", t.sess.ID, err)
	}
	return s.Version != t.sess.Version && len(s.Injections) > len(t.sess.Injections), nil
}
