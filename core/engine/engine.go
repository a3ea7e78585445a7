package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/access"
	"github.com/plangate/plangate/core/backoff"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Config is the part of plangate's configuration the engine needs.
type Config struct {
	Reach           machine.Reach // what a granted command may do here (tools.run_command)
	PlansDir        string
	WorkspaceRoot   string
	PerSession      bool // one workspace sub-directory per session
	SystemPrompt    string
	MaxIterations   int
	HistoryMessages int
	HistoryChars    int  // character budget of the transcript sent to the model
	ToolResultChars int  // a longer tool result is cut, with a note saying so
	PlanMode        bool // plan_mode.enabled
	StartInPlan     bool
	AutoApprove     bool     // default for new sessions
	Approvers       []string // "channel:user id"
	// Policies are access.policies; where one matches a session, its approvers replace
	// Approvers there (docs/design.md §12).
	Policies []machine.Policy
	// EditHints say, per channel name, how a person sends an edited plan file back there
	// (each adapter's EditHint); a channel without one is told to attach it to /plan edit.
	EditHints        map[string]string
	AutoApproveRules []machine.ApproveRule // plan_mode.auto_approve_rules
	Nudges           []time.Duration       // plan_mode.nudges: one-shot reminders after a decision starts waiting
	ApprovalTimeout  time.Duration         // expires a pending plan; 0 = never
	// WorkspaceCopy writes the accepted plan into the workspace as PLAN.md and PLAN.json
	// (plan_mode.workspace_copy; on by default in the config file, off in a zero Config).
	WorkspaceCopy bool
	Planner       Planner       // plan_mode.planner
	LeaseTTL      time.Duration // how long a session lease lasts without renewal; 0 = DefaultLeaseTTL
	// Stream shows a turn's answer as a draft while the model writes it (llm.stream; see
	// draft.go), when the model is a core.Streamer and the Sender a core.Drafter.
	Stream bool
	// TypingDelay is how long a model call runs before the chat is shown the typing
	// indicator; 0 shows it at once, in the background (see typing.go).
	TypingDelay time.Duration
	// MaxVerifierRetries is how many failed runs of a plan's verification commands go
	// back to the agent before the turn stops (retry_policy.max_verifier_retries); 0 is
	// machine.DefaultMaxVerifierRetries, NoVerifierRetries stops at the first failure.
	MaxVerifierRetries int
	// EscalateTo are the chats told once about a pending plan nobody decided on after its
	// last reminder (plan_mode.escalate_to); none: nobody is.
	EscalateTo []core.Address
	// DecideURL is the web channel's address (http.public_url while the channel is on),
	// for the link to a session's page in an escalation; "" = no link.
	DecideURL string
	// Boundary is plan_mode.boundary, the operator's limits every plan inherits: the
	// judge refuses a plan that widens it, and the planning card names it.
	Boundary plan.Boundary
	// MaxSameFailure is how many times in a row the same tool error may happen before the
	// turn stops (agent.max_same_failure); 0 = DefaultMaxSameFailure.
	MaxSameFailure int
	// Destructive are the commands a run_command must not match to run without a person
	// (tools.run_command.destructive; guards.go); none in a zero Config.
	Destructive []machine.CommandPattern
	// MaxTokensPerPlan is plan_mode.max_tokens_per_plan: the tokens one version's planning
	// and execution may use before its turn stops (token_budget_exceeded); 0 = no limit.
	MaxTokensPerPlan int64
	// MaxTokensPerSessionDay is agent.max_tokens_per_session_day: the tokens one session's
	// calls may use in a day (UTC) before its turns stop (daily_token_budget_exceeded);
	// 0 = no limit.
	MaxTokensPerSessionDay int64
	// Access is who may talk at all and how much (access.allowed_users,
	// access.unlisted_channels, access.rate_limit; admission.go); a zero value lets
	// everyone talk without limit.
	Access access.Rules
}

// NoVerifierRetries is Config.MaxVerifierRetries for no retries.
const NoVerifierRetries = -1

// DefaultMaxSameFailure is agent.max_same_failure's default: the same tool error three
// times in a row stops the turn.
const DefaultMaxSameFailure = 3

// Deps are the ports the engine talks through. Tools and Nudger may be nil.
type Deps struct {
	Store  core.Store
	Model  core.Model
	Tools  core.Toolbox
	Out    core.Sender
	Nudger Nudger
	Log    *slog.Logger
	Now    func() time.Time // defaults to time.Now
	Random io.Reader        // defaults to crypto/rand; approval ids come from it

	// NudgeSpecs checks and evaluates /plan nudge cron specs (nudges.Specs); nil makes
	// recurring reminders unavailable.
	NudgeSpecs machine.NudgeSpecs
	// Owner names this engine as a lease holder; "" is the process's own id. Tests that
	// play two processes in one give each engine its own.
	Owner    string
	Observer Observer // for /metrics; nil records nothing
	// Checks runs the command checks of a plan's verification (the workspace toolbox);
	// nil: plans whose verification names commands are refused.
	Checks core.Checker
	// After is the wait between attempts of a message kept through a store outage
	// (outage.go) and of one queued for another process's turn (runMessage); nil is
	// time.After.
	After func(d time.Duration) <-chan time.Time
	// Secrets finds credentials in what the agent writes and in what its commands print
	// (guards.go); nil checks nothing.
	Secrets core.SecretScanner
}

// Nudger is the port to the nudge scheduler (nudges.Scheduler): the engine tells it when a
// session's schedules may have changed in the store.
type Nudger interface {
	SessionChanged(ctx context.Context, sessionID string)
}

// Engine applies messages to sessions: one job at a time per session, sessions
// concurrently. Every state change is one store transaction with its audit rows.
type Engine struct {
	cfg Config
	d   Deps

	mu       sync.Mutex
	queues   map[string]*queue
	inflight int // read-only jobs running outside a queue
	files    *fileWriter
	progress progressIDs
	drafts   draftClocks // when each chat's draft last changed (draft.go)
	typer    typist
	windows  windowCache // transcript windows of recent sessions (see windows.go)
	// fallbacks holds, per session, why its last planning call was answered by llm.model
	// (core.ModelResponse.Fallback), for /plan status; this process's calls only.
	fallbacks sync.Map

	// renewAfter schedules a turn's next lease renewal (time.AfterFunc; see renew.go).
	renewAfter func(d time.Duration, f func()) func() bool
	pending    sync.Map // claimed reminder rows by reminderKey, waiting for Nudge
	sending    sending  // outbox rows being delivered, waiting to be sent again, and the sessions they hold
	dropsMu    sync.Mutex
	drops      map[string]*dropNote // by session: replies given up, not yet told (dropped.go)
	telling    map[int64]dropNote   // by notice row: what a notice not yet delivered tells
	obs        observing
	// delayed: sessions whose chat was told that a message waits for the store (outage.go).
	delayed map[string]bool
	gate    *access.Gate // admits inbound messages before they are queued (admission.go)
}

type job struct {
	ctx     context.Context
	msg     core.Message
	then    func(error)      // called with the outcome
	inbound *core.InboundKey // recorded with the outcome of the message (see applyInbound)
	parsed  commands.Result  // the message parsed once, at enqueue
	// seenApproval is the approval id that was pending when a typed /plan accept or
	// revise arrived, read at enqueue (nil if it could not be read): a bare decision may
	// only take the version the person could have seen, not one the running turn proposed
	// meanwhile. A message lost with its process is redelivered and read again then.
	seenApproval *string
	// seenAtStart: j was queued in an idle session, so seenApproval is read when it
	// starts, with the session (see enqueueIdle).
	seenAtStart bool
	// sys, when set, makes this a system job (a nudge, an expiry): it runs in the
	// session's queue like a message, but no person sent it.
	sys       func(ctx context.Context, t *jobRun) error
	sessionID string
	outcome   string // what became of the message, for the Observer ("" until known)
	// retried: an earlier attempt failed because the store was out (outage.go), and may
	// have committed the message before it did.
	retried bool
	stored  bool // a commit of this job went through (jobRun.commit)
}

type queue struct {
	jobs    []*job
	running bool
}

// NewEngine wires an engine. It does no I/O.
func NewEngine(cfg Config, d Deps) *Engine {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Random == nil {
		d.Random = rand.Reader
	}
	if d.After == nil {
		d.After = time.After
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = 25
	}
	if cfg.MaxSameFailure <= 0 {
		cfg.MaxSameFailure = DefaultMaxSameFailure
	}
	if cfg.HistoryMessages <= 0 {
		cfg.HistoryMessages = 40
	}
	if cfg.HistoryChars <= 0 {
		cfg.HistoryChars = 120_000
	}
	if cfg.ToolResultChars <= 0 {
		cfg.ToolResultChars = 16_000
	}
	switch {
	case cfg.MaxVerifierRetries == 0:
		cfg.MaxVerifierRetries = machine.DefaultMaxVerifierRetries
	case cfg.MaxVerifierRetries < 0:
		cfg.MaxVerifierRetries = 0
	}
	if d.Owner == "" {
		d.Owner = processOwner()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	e := &Engine{cfg: cfg, d: d, queues: map[string]*queue{}, files: &fileWriter{dir: cfg.PlansDir, log: d.Log, marks: &toolMarks{tools: d.Tools}, reach: cfg.Reach}}
	e.typer.after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	e.renewAfter = e.typer.after
	e.progress.st = d.Store
	e.sending.init()
	e.drops = map[string]*dropNote{}
	e.telling = map[int64]dropNote{}
	e.obs.obs = d.Observer
	e.delayed = map[string]bool{}
	e.gate = access.New(cfg.Access)
	if d.Observer == nil {
		e.obs.obs = nopObserver{}
	}
	return e
}

// Enqueue queues one inbound message for its session and returns a channel that receives
// the outcome once the message is handled.
func (e *Engine) Enqueue(ctx context.Context, m core.Message) <-chan error {
	done := make(chan error, 1)
	e.EnqueueThen(ctx, m, func(err error) { done <- err })
	return done
}

// EnqueueThen queues one inbound message for its session and calls then with the outcome,
// on the goroutine that handled it, before that session's next job: an adapter that
// settles each message needs no goroutine of its own waiting for it. then must not block.
// Messages of one session are handled in the order they were queued; read-only commands
// are answered at once when nothing is waiting ahead of them, even while a turn runs.
func (e *Engine) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	j := &job{ctx: ctx, msg: m, then: then}
	if m.ID != "" {
		j.inbound = &core.InboundKey{Channel: m.Address.Channel, Account: m.Address.Account, EventID: m.ID}
	}
	if m.Action == nil {
		j.parsed = commands.Parse(m.Text, "")
	}
	if !e.admit(ctx, m, j.parsed, then) {
		return
	}
	id := m.Address.SessionID()
	if c := j.parsed.Cmd; j.parsed.Kind == commands.IsCommand && (c.Name == commands.Accept || c.Name == commands.Revise) {
		if e.enqueueIdle(id, j) {
			return
		}
		j.seenApproval = e.pendingApproval(j.ctx, id)
	}
	e.enqueue(id, j, j.readOnly())
}

// enqueueIdle queues j if nothing runs or waits in its session, in which case j starts at
// once and what it finds pending when it loads the session is what the person could have
// seen (seenAtStart): one read of the session instead of two, on PostgreSQL a round trip.
func (e *Engine) enqueueIdle(id string, j *job) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.queues[id] != nil {
		return false
	}
	j.seenAtStart = true
	q := &queue{jobs: []*job{j}, running: true}
	e.queues[id] = q
	go e.drain(id, q)
	return true
}

// pendingApproval reads the approval id pending in a session ("" if none); nil if the
// store could not say.
func (e *Engine) pendingApproval(ctx context.Context, sessionID string) *string {
	s, err := e.d.Store.Session(ctx, sessionID)
	switch {
	case errors.Is(err, core.ErrNotFound):
		s.ApprovalID = ""
	case err != nil:
		e.d.Log.Warn("reading the pending approval", "session", sessionID, "err", err)
		return nil
	}
	return &s.ApprovalID
}

// system queues fn for a session as a system job and waits for it.
func (e *Engine) system(ctx context.Context, sessionID string, fn func(ctx context.Context, t *jobRun) error) error {
	return waitJob(ctx, e.systemAsync(ctx, sessionID, fn))
}

// systemAsync queues fn as a system job now and returns its outcome channel: whatever is
// queued for the session after this call runs after fn.
func (e *Engine) systemAsync(ctx context.Context, sessionID string, fn func(ctx context.Context, t *jobRun) error) <-chan error {
	done := make(chan error, 1)
	e.enqueue(sessionID, &job{ctx: ctx, then: func(err error) { done <- err }, sys: fn, sessionID: sessionID}, false)
	return done
}

func waitJob(ctx context.Context, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goCountedLocked runs fn in a goroutine that Wait waits for (counted in inflight until
// fn returns); e.mu must be held.
func (e *Engine) goCountedLocked(fn func()) {
	e.inflight++
	go func() {
		fn()
		e.mu.Lock()
		e.inflight--
		e.mu.Unlock()
	}()
}

func (e *Engine) enqueue(id string, j *job, readOnly bool) {
	e.mu.Lock()
	q := e.queues[id]
	if (q == nil || len(q.jobs) == 0) && readOnly {
		e.goCountedLocked(func() { j.then(e.run(j)) }) // then too: Wait covers it
		e.mu.Unlock()
		return
	}
	if q == nil {
		q = &queue{}
		e.queues[id] = q
	}
	q.jobs = append(q.jobs, j)
	if !q.running {
		q.running = true
		go e.drain(id, q)
	}
	e.mu.Unlock()
}

// drain runs the queued jobs of one session in order, then retires the worker.
func (e *Engine) drain(id string, q *queue) {
	for {
		e.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			delete(e.queues, id)
			e.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs = q.jobs[1:]
		e.mu.Unlock()
		j.then(e.run(j))
	}
}

// interrupted reports whether a job waiting for the session would stop the running turn:
// a /plan revise, /plan off or Revise click from someone allowed to make it, that will
// apply in the current phase (a command that is going to be refused must not stop work).
func (e *Engine) interrupted(sess core.Session) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.queues[sess.ID]
	if q == nil {
		return "", false
	}
	for _, j := range q.jobs {
		if j.sys != nil {
			continue
		}
		m := j.msg
		if m.Action != nil && m.Action.Kind == core.ActionRevise && m.Action.Value != "" &&
			sess.Phase == core.PhaseAwaitingApproval && m.Action.ApprovalID == sess.ApprovalID && machine.Authorized(e.approvers(sess.Address), commands.Approver, sess, m) {
			return "a revision", true
		}
		if m.Action != nil || m.Sender.IsBot {
			continue
		}
		r := j.parsed
		if r.Kind != commands.IsCommand || !machine.Authorized(e.approvers(sess.Address), r.Cmd.Spec.Who, sess, m) {
			continue
		}
		switch {
		case r.Cmd.Name == commands.Revise && (sess.Phase == core.PhaseExecuting || sess.Phase == core.PhaseAwaitingApproval):
			return "/plan revise", true
		case r.Cmd.Name == commands.Off && sess.Phase != core.PhaseOff:
			return "/plan off", true
		}
	}
	return "", false
}

// asks reports whether the job is a person's message to the agent: plain text, not a
// command, a button or a system job.
func (j *job) asks() bool {
	return j.sys == nil && j.msg.Action == nil && j.parsed.Kind == commands.NotCommand
}

// readOnly reports whether the job is a command anyone may run that changes nothing.
func (j *job) readOnly() bool {
	if j.msg.Action != nil {
		return false
	}
	switch r := j.parsed; r.Kind {
	case commands.IsUsage:
		return true
	case commands.IsCommand:
		return r.Cmd.Spec.Who == commands.Anyone
	}
	return false
}

// run handles one job. Failures are reported to the chat and returned.
func (e *Engine) run(j *job) error {
	ctx := j.ctx
	if j.sys != nil {
		sess, err := e.d.Store.Session(ctx, j.sessionID)
		if err != nil {
			return fmt.Errorf("loading session %s: %w", j.sessionID, err)
		}
		err = j.sys(ctx, &jobRun{e: e, j: j, sess: sess})
		if err != nil && !errors.Is(err, core.ErrConflict) {
			e.d.Log.Error("system job", "session", j.sessionID, "err", err)
		}
		return err
	}
	err := e.runKept(j)
	e.observeInbound(j, err)
	return err
}

// runMessage handles a person's message (or a platform event of one).
func (e *Engine) runMessage(j *job) error {
	ctx := j.ctx
	m := j.msg
	if m.Sender.IsBot {
		j.outcome = inboundRefused
		return nil // bots never drive a session, including this one
	}
	if j.retried && j.stored && !j.readOnly() {
		return e.carryOn(ctx, j) // an attempt the store's outage cut short stored the message
	}
	inbound, waits := j.inbound, backoff.New(requeueFirstWait, requeueMaxWait)
	for {
		err := e.handleMessage(ctx, j)
		if !errors.Is(err, errRequeue) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queuing a message of %s for the session's lease holder: %w", m.Address.SessionID(), ctx.Err())
		case <-e.d.After(waits.NextBackOff()):
		}
		// The attempt that lost the race took the event's key into its commit
		// (applyInbound), which stored nothing: the next one records it, or a
		// redelivery of the event would be answered again.
		j.inbound = inbound
	}
}

// A message queued for another process's turn that lost a commit race with that process
// (errRequeue) is handled again, after a wait that doubles from requeueFirstWait up to
// requeueMaxWait, until it is stored or the engine's work ends: the holder commits a few
// times a turn and then lets go, so the message goes through, never given up. A shutdown
// meanwhile leaves the event in its adapter's inbox for the next start.
const (
	requeueFirstWait = 5 * time.Millisecond
	requeueMaxWait   = 500 * time.Millisecond
)

// handleMessage is one attempt of runMessage on the session as stored now; it returns
// errRequeue when nothing of the message was stored and it should be handled again.
func (e *Engine) handleMessage(ctx context.Context, j *job) error {
	m := j.msg
	sess, plan, err := e.loadSession(ctx, m, j.inbound)
	if errors.Is(err, core.ErrDuplicate) && j.retried && !j.readOnly() {
		return e.carryOn(ctx, j) // committed by an attempt the store's outage cut short
	}
	if errors.Is(err, core.ErrDuplicate) { // the inbound check of SessionPlan's read
		e.d.Log.Debug("duplicate inbound event", "channel", m.Address.Channel, "event", m.ID)
		j.outcome = inboundDuplicate
		return nil
	}
	if err == nil && j.seenAtStart && j.seenApproval == nil {
		seen := sess.ApprovalID
		j.seenApproval = &seen
	}
	t := &jobRun{e: e, j: j, sess: sess, loaded: plan, loadedAt: sess.Version}
	if err != nil {
		t.sess.ID, t.sess.Address = m.Address.SessionID(), m.Address // where the notice's row belongs
		if e.outage(j, err) {
			return err // kept: handled again once the store is back (runKept)
		}
		t.notice(ctx, "Something went wrong reading this conversation's state; nothing was changed.")
		return err
	}
	err = t.dispatch(ctx)
	if errors.Is(err, errRequeue) {
		return err
	}
	if errors.Is(err, core.ErrConflict) {
		t.conflictNotice(ctx)
		return nil
	}
	if errors.Is(err, errLeaseHeld) {
		return nil // the holder's turn picks the work up (see underLease)
	}
	if errors.Is(err, core.ErrDuplicate) {
		j.outcome = inboundDuplicate
		return nil
	}
	if err != nil && e.outage(j, err) {
		return err // kept: handled again once the store is back (runKept)
	}
	if err != nil {
		e.d.Log.Error("handling message", "session", sess.ID, "err", err)
		t.notice(ctx, "Something went wrong handling that; nothing was changed. Details are in the gateway log.")
	}
	return err
}

// loadSession reads the message's session (a new one when there is none) and its plan,
// checking inbound in the same read (an error wrapping ErrDuplicate: recorded).
func (e *Engine) loadSession(ctx context.Context, m core.Message, inbound *core.InboundKey) (core.Session, *core.Plan, error) {
	id := m.Address.SessionID()
	s, plan, err := e.d.Store.SessionPlan(ctx, id, inbound)
	if errors.Is(err, core.ErrNotFound) {
		now := e.d.Now()
		return core.Session{
			ID: id, Address: m.Address, Phase: core.PhaseOff, AutoApprove: e.cfg.AutoApprove,
			Owner: m.Sender.ID, CreatedAt: now, UpdatedAt: now,
		}, nil, nil
	}
	if err != nil {
		return core.Session{}, nil, fmt.Errorf("loading session %s: %w", id, err)
	}
	return s, plan, nil
}

// send delivers a reply; a delivery failure is logged and returned, never taken as a
// decision.
func (e *Engine) send(ctx context.Context, r core.Reply) (string, error) {
	id, err := e.d.Out.Send(ctx, r)
	if err != nil {
		e.d.Log.Error("delivering reply", "channel", r.To.Channel, "chat", r.To.Chat, "err", err)
		return "", fmt.Errorf("delivering reply: %w", err)
	}
	return id, nil
}

// Wait blocks until no job is queued or running in any session, or ctx ends: a clean
// shutdown stops receiving first, then waits here for in-flight turns to finish.
func (e *Engine) Wait(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		e.mu.Lock()
		idle := len(e.queues) == 0 && e.inflight == 0
		e.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
