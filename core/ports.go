package core

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/plangate/plangate/core/plan"
)

// Errors the store reports and the engine branches on.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("session changed concurrently") // optimistic lock lost
	ErrDuplicate = errors.New("inbound event already handled")
)

// OutageTeller is implemented by stores that can tell a failure of the store itself from
// an answer about the request: Outage reports whether err means the store could not be
// reached or written just now (a connection refused or cut, a server shutting down or
// restarting, a full disk, an I/O error, a lock held past the busy timeout), so that the
// same call may succeed once the store is back. The engine keeps a person's message
// through such an outage and handles it afterwards (docs/design.md §8).
type OutageTeller interface {
	Outage(err error) bool
}

// EventKind names an audit row in plan_events.
type EventKind string

// Audit event kinds.
const (
	EventEntered      EventKind = "entered"
	EventExited       EventKind = "exited" // plan mode turned off with no plan involved
	EventProposed     EventKind = "proposed"
	EventSuperseded   EventKind = "superseded"
	EventAccepted     EventKind = "accepted"
	EventAutoAccepted EventKind = "auto_accepted"
	EventAutoChanged  EventKind = "auto_changed"
	EventRevised      EventKind = "revised"
	EventAsked        EventKind = "asked"
	EventAnswered     EventKind = "answered"
	EventExpired      EventKind = "expired"
	EventAbandoned    EventKind = "abandoned"
	EventAborted      EventKind = "aborted"
	EventStepUpdated  EventKind = "step_updated"
	EventCompleted    EventKind = "completed"
	EventNudged       EventKind = "nudged"
	EventRefused      EventKind = "refused"   // an unauthorized or stale decision
	EventNudgeSet     EventKind = "nudge_set" // a change of the session's reminders by /plan nudge
	// EventApprovalRecorded is one acceptance counted under a policy that needs more; the
	// detail is the progress, "1 of 2 approvals (alice)".
	EventApprovalRecorded EventKind = "approval_recorded"
	// EventStopped is a stop condition of an executing plan; the detail is its kind and
	// notice, "max_iterations_reached: Stopped after 12 model calls ...".
	EventStopped EventKind = "stopped"
	// EventVerification is one run of an executing plan's command checks by plangate; the
	// detail is the outcome, "Attempt 2: 1 of 2 checks failed".
	EventVerification EventKind = "verification"
	// EventEscalated is a pending plan nobody decided on after its last reminder, told to
	// plan_mode.escalate_to; the detail names where.
	EventEscalated EventKind = "escalated"
	// EventUndone is a /plan undo that put the files a version changed back as they were
	// at its acceptance; the detail lists them, "restored a.txt, removed new.txt".
	EventUndone EventKind = "undone"
	// EventCommented is a comment on steps of a pending version; the detail is the comment,
	// "c1 on step 2: use the v2 API".
	EventCommented EventKind = "commented"
)

// Event is one audit row.
type Event struct {
	ID          int64
	SessionID   string
	PlanID      string // "" when no plan is involved
	PlanVersion int
	Kind        EventKind
	Actor       Actor
	Channel     string
	Detail      string
	At          time.Time
}

// Role is the author of a transcript entry, as the model API names it.
type Role string

// Transcript roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ChatMessage is one entry of a session's transcript and of a model request.
type ChatMessage struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"` // tool name for RoleTool, sender name for RoleUser
	At         time.Time  `json:"at,omitzero"`
}

// InboundKey identifies a platform event for de-duplication.
type InboundKey struct {
	Channel string
	Account string
	EventID string
}

// Change is everything one state transition writes; the store commits it in a single
// transaction or not at all.
type Change struct {
	// Session is the new session state. Version is the version it was read at: 0 inserts a
	// new session, otherwise the update succeeds only if the stored version still matches
	// (ErrConflict if not). nil leaves the session row alone.
	Session  *Session
	Plans    []Plan // inserted or updated by ID
	Events   []Event
	Messages []ChatMessage // appended to the session's transcript
	// Inbound, when set, is recorded in the same transaction; if it was already recorded
	// the whole change is rolled back with ErrDuplicate.
	Inbound *InboundKey
	// SessionID names the session for Events and Messages when Session is nil.
	SessionID string
	// CancelNudges cancels every active nudge schedule of the session; CancelReminders
	// only its reminders (an approval timeout keeps running). Cancelling happens before
	// Nudges are inserted, so a change can replace a session's schedules.
	CancelNudges    bool
	CancelReminders bool
	// Nudges are new schedules for the session (ID 0; the store assigns ids).
	Nudges []Nudge
	// Lazy marks a change that records no decision (a plain message, the agent's own
	// transcript entries): the store may commit it without waiting for the disk. It is still
	// atomic and survives a killed process; the next durable commit makes it durable, in
	// order. Only an OS crash can lose it, and then the platform redelivers the event.
	Lazy bool
	// Outbox holds replies committed with this change, delivered after the commit (or after
	// a restart) and marked sent. The store assigns each entry's ID in place.
	Outbox []Outgoing
	// PlanTokens, when set, adds model tokens to a plan version of the session, after
	// Plans are written (so a version this change inserts can take them).
	PlanTokens *PlanTokens
}

// PlanTokens is an addition to one plan version's Plan.Tokens.
type PlanTokens struct {
	PlanID string
	Add    plan.Tokens
}

// Outgoing is one reply in the outbox: committed in the transaction that produced it,
// delivered by a sender afterwards and then marked sent.
type Outgoing struct {
	ID        int64 // assigned by the store
	SessionID string
	Reply     Reply
	CreatedAt time.Time
	Attempts  int // delivery attempts so far
	// Owner is the lease owner id of the engine that committed the row. Until it is gone, its
	// unsent rows are its own to send: another replica's start-up and takeover skip them.
	Owner string
	// Dropped is why the row was given up ("" while it is not); read by listings of drops.
	Dropped string
}

// Store is the persistence port: both drivers of package store implement all of it, the
// outbox, leases, reminders, progress records and the tool-run ledger included, so the
// engine has one mode.
type Store interface {
	Session(ctx context.Context, id string) (Session, error)
	Sessions(ctx context.Context) ([]Session, error)
	// SessionPlan reads a session and its current plan (nil if none) together from one
	// snapshot, in one round trip on a database server; the error wraps ErrNotFound when
	// there is no such session. With inbound set, the same read first answers SeenInbound
	// for it: when the event is already recorded the error wraps ErrDuplicate and the
	// session is not returned, so a person's message costs one read before its turn.
	SessionPlan(ctx context.Context, id string, inbound *InboundKey) (Session, *Plan, error)
	Plan(ctx context.Context, id string) (Plan, error)
	PlanByApproval(ctx context.Context, approvalID string) (Plan, error)
	// Plans lists the plans of a session (all sessions for ""), oldest first.
	Plans(ctx context.Context, sessionID string) ([]Plan, error)
	// PendingPlans counts the plan versions waiting for a decision, in one query.
	PendingPlans(ctx context.Context) (int, error)
	// Transcript returns the newest limit entries of a session, oldest first.
	Transcript(ctx context.Context, sessionID string, limit int) ([]ChatMessage, error)
	Events(ctx context.Context, sessionID string) ([]Event, error)
	SeenInbound(ctx context.Context, key InboundKey) (bool, error)
	// Nudges lists the schedules of a session (all sessions for ""), active ones first by
	// next fire time.
	Nudges(ctx context.Context, sessionID string) ([]Nudge, error)
	// Commit applies ch atomically and returns the session as stored (new Version).
	Commit(ctx context.Context, ch Change) (Session, error)

	// The outbox. ClaimOutbox lets two processes deliver the same left-over rows without
	// both sending one: a row is claimed (its attempts compared and counted) before it is sent.
	UnsentOutbox(ctx context.Context, channels []string, limit int) ([]Outgoing, error)
	MarkSent(ctx context.Context, id int64, platformID string, at time.Time) error
	DropOutbox(ctx context.Context, id int64, why string) error
	NoteOutboxAttempt(ctx context.Context, id int64) error
	ClaimOutbox(ctx context.Context, id int64, attempts int) (bool, error)

	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (Lease, bool, error)
	ReleaseLease(ctx context.Context, name, owner string) error
	Lease(ctx context.Context, name string, now time.Time) (Lease, error)

	// ChannelState and SetChannelState keep small records by key (the store's channel state).
	ChannelState(ctx context.Context, channel, account, key string) (string, bool, error)
	SetChannelState(ctx context.Context, channel, account, key, value string) error

	// FireNudgeWith claims a reminder's occurrence with its outbox row.
	FireNudgeWith(ctx context.Context, id int64, scheduledAt time.Time, firedAt, next time.Time, out []Outgoing) (bool, error)

	// The tool-run ledger.
	StartToolRun(ctx context.Context, r ToolRun) error
	FinishToolRun(ctx context.Context, r ToolRun) error
	UnfinishedToolRuns(ctx context.Context, sessionID string) ([]ToolRun, error)
}

// ToolKind is how the gate treats a tool. The zero value is not a kind.
type ToolKind string

// Tool kinds.
const (
	ToolPlan     ToolKind = "plan"     // plan-mode tools, handled by the core
	ToolReadOnly ToolKind = "readonly" // may run in any phase
	ToolMutating ToolKind = "mutating" // only while executing an accepted plan, within scope
)

// ToolSpec describes one tool to the model and to the gate.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments
	Kind        ToolKind
	Destructive bool // an MCP tool that may destroy (destructiveHint): marked in plans
}

// ProgressName is the sender name of the executing plan's progress (plan.Progress), the
// last message of an executing request: plangate's record, not a person's message, and
// never stored in the transcript.
const ProgressName = "plan_progress"

// ModelRequest is one call to the model.
type ModelRequest struct {
	SessionID string
	Planning  bool // the session is planning: providers may use a dedicated plan model
	System    string
	Messages  []ChatMessage
	Tools     []ToolSpec
}

// ModelResponse is the model's answer: final text, tool calls, or both.
type ModelResponse struct {
	Text      string
	ToolCalls []ToolCall
	// Fallback is set when the planning model failed and this answer came from the main
	// model instead: why, in words for /plan status.
	Fallback string
	// Usage is the call's tokens as the API reported them; zero when it reported none.
	Usage Usage
}

// Usage is one model call's tokens from the API's usage: Prompt (prompt_tokens) includes
// Cached (prompt_tokens_details.cached_tokens); Completion is completion_tokens. The zero
// value is a call that reported none.
type Usage struct {
	Prompt, Cached, Completion int64
}

// Tokens is the call as a count: one call, unreported when its usage is zero.
func (u Usage) Tokens() plan.Tokens {
	t := plan.Tokens{Prompt: u.Prompt, Cached: u.Cached, Completion: u.Completion, Calls: 1}
	if u == (Usage{}) {
		t.Unreported = 1
	}
	return t
}

// Model is the port to a language model provider.
type Model interface {
	Complete(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// Streamer is what a Model may implement to hand out its answer's text while it is being
// written. CompleteStream is Complete, calling onText with the answer's text so far (the
// whole of it each time, never a delta: a retried or fallen-back request starts again from
// its first word, and the caller shows what it was handed) from the goroutine that called
// it, before it returns. onText is called for text only, never for tool calls.
type Streamer interface {
	CompleteStream(ctx context.Context, req ModelRequest, onText func(text string)) (ModelResponse, error)
}

// Workspace is where a session's workspace tools operate.
type Workspace struct {
	SessionID string
	Dir       string // workspace directory of this session
}

// Toolbox is the port to the workspace tools (read, list, search, write, edit, run).
type Toolbox interface {
	Tools() []ToolSpec
	// Call runs a tool. A returned error is shown to the model as a tool error.
	Call(ctx context.Context, ws Workspace, name string, args json.RawMessage) (string, error)
	// WritePaths names the workspace paths a mutating call would change, for the scope check.
	WritePaths(name string, args json.RawMessage) ([]string, error)
}

// Fingerprinter is what a Toolbox may implement to bind plans to the workspace they were
// made on: the workspace's state now (git's HEAD and every file's path, size and hash),
// compared at acceptance with the state the version was proposed on.
type Fingerprinter interface {
	Fingerprint(ctx context.Context, ws Workspace) (*plan.Tree, error)
	// LinesChanged counts the lines added plus removed in paths from tree a to tree b
	// (text files only; a path missing from a tree is an empty file).
	LinesChanged(ctx context.Context, a, b *plan.Tree, paths []string) (int, error)
	// LineCounts is the same count per path, lines added and removed apart, in the order
	// of paths; a file whose lines cannot be counted has Counted false.
	LineCounts(ctx context.Context, a, b *plan.Tree, paths []string) ([]plan.FileLines, error)
}

// Restorer is what a Toolbox that keeps fingerprints may implement for /plan undo:
// Restore puts each of paths back as tree was has it (its kept content and mode; removed
// when was does not hold it), provided every one of them is now as tree left has it. When
// one is not, or the state of one at was was not kept, it writes nothing and says which
// in the result. Every write stays inside ws.Dir.
type Restorer interface {
	Restore(ctx context.Context, ws Workspace, was, left *plan.Tree, paths []string) (plan.Restore, error)
}

// Checker runs the command checks of a plan's verification, under run_command's rules,
// sandbox and limits. CheckArgv says why argv could not run here (nil: it can); RunCheck
// runs it in ws and reports its exit code and output tail, an error only when the run was
// cancelled or could not be set up.
type Checker interface {
	CheckArgv(argv []string) error
	RunCheck(ctx context.Context, ws Workspace, argv []string) (plan.CheckRun, error)
}

// ToolServerDown is the error of a tool call whose server stopped during it (an MCP server
// that crashed or hung). The model sees Msg as the tool error and the turn goes on; the
// chat is told once per job that the server's tools are withdrawn.
type ToolServerDown struct {
	Server string
	Msg    string
}

func (e *ToolServerDown) Error() string { return e.Msg }

// Sender delivers replies to the channel named in Reply.To and returns the platform's
// message id (used for edits in place).
type Sender interface {
	Send(ctx context.Context, r Reply) (string, error)
}

// Drafter is what a Sender may implement so a reply can be shown as a draft while the
// model writes it: CanDraft tells whether messages on a channel are edited in place,
// PostDraft posts one (not counted as a reply), and EditDraft changes it, returning an
// error instead of sending a new message (a draft is best effort; only the final reply,
// through the outbox, is guaranteed).
type Drafter interface {
	CanDraft(channel string) bool
	PostDraft(ctx context.Context, r Reply) (string, error)
	EditDraft(ctx context.Context, id string, r Reply) error
}
