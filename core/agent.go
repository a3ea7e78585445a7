package core

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxChainedTurns bounds how many agent turns one message can start back to back (an
// auto-approved plan starts executing right after it was proposed).
const maxChainedTurns = 4

// toolResult is the outcome of one tool call.
type toolResult struct {
	content string
	isError bool
	endTurn bool   // the turn ends after this call (a plan or question was posted)
	stop    string // a stop condition: report this to the chat and end the turn
	// change is the call's state transition. It is committed in one transaction with the
	// call's transcript entries, and its after hook runs once it is stored.
	change *stateChange
}

type stateChange struct {
	next  Session
	ch    Change
	after func(ctx context.Context) // replies and file refreshes; only after the commit
}

func toolError(format string, args ...any) toolResult {
	return toolResult{content: "error: " + fmt.Sprintf(format, args...), isError: true}
}

func (t *turnState) userMessage(text string) ChatMessage {
	m := t.msg()
	return ChatMessage{Role: RoleUser, Content: text, Name: m.Sender.Name, At: t.e.d.Now()}
}

// onText handles a person's plain message: an answer to a pending question, or a message
// for the agent (a comment on a pending plan included).
func (t *turnState) onText(ctx context.Context) error {
	m := t.msg()
	text := strings.TrimSpace(m.Text)
	for _, a := range m.Attachments {
		text += fmt.Sprintf("\n[attachment: %s]", a.Name)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if q := t.sess.Question; q != nil && t.e.mayDecide("approver_or_owner", t.sess, m) {
		if _, ok := matchOption(q, text); ok {
			return t.answer(ctx, text)
		}
		t.notice(ctx, "A question is waiting: %s — %s. Answer with /plan answer <number or text>.", q.Text, optionList(q.Options))
		return nil
	}
	next := t.sess
	ch := Change{Messages: []ChatMessage{t.userMessage(text)}}
	entered := false
	if t.sess.Version == 0 && t.sess.Phase == PhaseOff && t.e.cfg.PlanMode && t.e.cfg.StartInPlan {
		next.Phase, _ = t.e.machine.Next(PhaseOff, TrigOn)
		ch.Events = []Event{t.event(EventEntered, t.person(), nil, "plan_mode.start_in_plan")}
		entered = true
	}
	// A message for the agent is no decision: unless it changes the phase it need not wait
	// for the disk (see Change.Lazy).
	ch.Lazy = !entered
	if err := t.commit(ctx, next, ch); err != nil {
		return err
	}
	if entered {
		t.e.reply(ctx, t.to(), "Plan mode is on. I'll look around (read-only) and propose a plan.")
	}
	return t.runTurns(ctx)
}

// runTurns runs an agent turn, and another while the previous one left injections for the
// agent (an auto-approved plan), up to maxChainedTurns.
func (t *turnState) runTurns(ctx context.Context) error {
	for range maxChainedTurns {
		again, err := t.runTurn(ctx)
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// runTurn runs the agent loop once. It reports whether injections are waiting for another
// turn.
func (t *turnState) runTurn(ctx context.Context) (bool, error) {
	e := t.e
	history, err := e.d.Store.Transcript(ctx, t.sess.ID, e.cfg.HistoryMessages)
	if err != nil {
		return false, fmt.Errorf("loading transcript: %w", err)
	}
	history = sanitizeHistory(trimHistory(history, e.cfg.HistoryChars))
	var turn []ChatMessage // this turn's entries, in the order the model sees them
	drained := 0           // injections of t.sess moved into the turn so far
	drain := func() {
		for _, inj := range t.sess.Injections[drained:] {
			m := ChatMessage{Role: RoleUser, Name: "plangate", Content: inj.Text, At: e.d.Now()}
			t.pending = append(t.pending, m)
			turn = append(turn, m)
		}
		drained = len(t.sess.Injections)
	}
	// flush commits what the turn produced, and removes drained injections from the queue.
	flush := func() error {
		if len(t.pending) == 0 && drained == 0 {
			return nil
		}
		next := t.sess
		next.Injections = t.undrained(next.Injections, &drained)
		// Only the agent's own output and drained injections: nothing a person decided.
		return t.commit(ctx, next, Change{Lazy: true})
	}
	var lastErr string
	sameErr, answered := 0, 0
	for range e.cfg.MaxIterations {
		if why, ok := e.interrupted(t.sess); ok {
			t.notice(ctx, "Stopped: %s came in.", why)
			return false, flush()
		}
		drain()
		e.typing(ctx, t.sess.Address)
		req := ModelRequest{
			SessionID: t.sess.ID,
			Planning:  t.sess.Phase == PhasePlanning || t.sess.Phase == PhaseAwaitingApproval,
			System:    e.systemPrompt(t.sess),
			Messages:  append(append([]ChatMessage(nil), history...), turn...),
			Tools:     e.toolSpecs(),
		}
		resp, err := e.d.Model.Complete(ctx, req)
		if err != nil {
			e.d.Log.Warn("model call failed", "session", t.sess.ID, "err", err)
			if len(t.sess.Injections) > 0 || answered > 0 {
				// A decision or earlier work stands; the agent just could not go on.
				t.notice(ctx, "The model could not answer: %s. What was decided stands; send a message (e.g. \"continue\") to let the agent go on.", oneLine(err.Error()))
			} else {
				t.notice(ctx, "The model could not answer: %s. Nothing changed; send your message again to retry.", oneLine(err.Error()))
			}
			if answered > 0 {
				return false, flush() // keep what this turn already did
			}
			// Nothing happened: drained injections stay queued for the next turn.
			t.pending = nil
			return false, nil
		}
		answered++
		asst := ChatMessage{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, At: e.d.Now()}
		t.pending = append(t.pending, asst)
		turn = append(turn, asst)
		if len(resp.ToolCalls) == 0 {
			if err := flush(); err != nil {
				return false, err
			}
			if strings.TrimSpace(resp.Text) != "" {
				e.reply(ctx, t.to(), resp.Text)
			}
			return len(t.sess.Injections) > 0, nil
		}
		var ended, stop string
		for _, call := range resp.ToolCalls {
			var res toolResult
			switch {
			case ended != "":
				res = toolResult{content: "not run: the turn ended with " + ended}
			case stop != "":
				res = toolResult{content: "not run: the turn was stopped"}
			default:
				if why, ok := e.interrupted(t.sess); ok {
					stop = "Stopped: " + why + " came in."
					res = toolResult{content: "not run: the user interrupted"}
					break
				}
				res = t.callTool(ctx, call)
				res.content = truncateResult(res.content, e.cfg.ToolResultChars)
			}
			m := ChatMessage{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.content, At: e.d.Now()}
			t.pending = append(t.pending, m)
			turn = append(turn, m)
			if c := res.change; c != nil {
				c.next.Injections = t.undrained(c.next.Injections, &drained)
				if err := t.commit(ctx, c.next, c.ch); err != nil {
					return false, err
				}
				if c.after != nil {
					c.after(ctx)
				}
			}
			if res.isError {
				if res.content == lastErr {
					sameErr++
				} else {
					lastErr, sameErr = res.content, 1
				}
				if sameErr >= 3 && stop == "" {
					stop = fmt.Sprintf("Stopped: the same tool error happened three times in a row (%s).", oneLine(strings.TrimPrefix(res.content, "error: ")))
				}
			} else if ended == "" && stop == "" {
				lastErr, sameErr = "", 0
			}
			if res.stop != "" && stop == "" {
				stop = res.stop
			}
			if res.endTurn && ended == "" {
				ended = call.Name
			}
		}
		if stop != "" {
			t.notice(ctx, "%s", stop)
			return false, flush()
		}
		// Record this round before the next model call (lazily: no disk wait): a tool may
		// have changed the workspace, and a process killed now must not forget that, nor
		// hand the agent the same decision again.
		if err := flush(); err != nil {
			return false, err
		}
		if ended != "" {
			return len(t.sess.Injections) > 0, nil
		}
	}
	t.notice(ctx, "Stopped after %d model calls without finishing (agent.max_iterations). Send a message to let me continue.", e.cfg.MaxIterations)
	return false, flush()
}

// undrained removes the injections this turn already moved into the transcript from the
// front of a session's queue (new ones may have been appended behind them) and resets the
// count: the commit that carries their transcript entries also takes them off the queue.
func (t *turnState) undrained(queue []Injection, drained *int) []Injection {
	n := min(*drained, len(queue))
	*drained = 0
	return append([]Injection(nil), queue[n:]...)
}

// trimHistory drops the oldest entries until the transcript fits the character budget;
// the newest entry always stays.
func trimHistory(h []ChatMessage, budget int) []ChatMessage {
	total := 0
	for i := len(h) - 1; i >= 0; i-- {
		total += messageSize(h[i])
		if total > budget && i < len(h)-1 {
			return h[i+1:]
		}
	}
	return h
}

func messageSize(m ChatMessage) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Args)
	}
	return n
}

// truncateResult cuts a tool result that is over the limit and says so, so the model
// knows it saw only part and can ask for less (read_file offset/limit).
func truncateResult(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: showing %d of %d characters; ask for a smaller part]", cut, len(s))
}

// sanitizeHistory makes a transcript window acceptable to chat APIs: it drops tool results
// whose call fell out of the window, and adds a placeholder result for a call whose result
// was never recorded (a crash mid-turn).
func sanitizeHistory(h []ChatMessage) []ChatMessage {
	out := make([]ChatMessage, 0, len(h))
	open := map[string]bool{}
	var openOrder []ChatMessage
	closeOpen := func() {
		for _, c := range openOrder {
			if open[c.ToolCallID] {
				out = append(out, c)
			}
		}
		open = map[string]bool{}
		openOrder = nil
	}
	for _, m := range h {
		if m.Role == RoleTool {
			if !open[m.ToolCallID] {
				continue
			}
			delete(open, m.ToolCallID)
			out = append(out, m)
			continue
		}
		closeOpen()
		out = append(out, m)
		for _, c := range m.ToolCalls {
			open[c.ID] = true
			openOrder = append(openOrder, ChatMessage{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "(no result was recorded for this call)"})
		}
	}
	closeOpen()
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// workspace returns the workspace of a session.
func (e *Engine) workspace(s Session) Workspace {
	dir := e.cfg.WorkspaceRoot
	if e.cfg.PerSession {
		dir = filepath.Join(dir, s.Address.Dir())
	}
	return Workspace{SessionID: s.ID, Dir: dir}
}
