package core

import "time"

// NudgeKind says whether a schedule fires once or repeats. The zero value is not a kind.
type NudgeKind string

// Nudge kinds.
const (
	NudgeOnce      NudgeKind = "once"
	NudgeRecurring NudgeKind = "recurring"
)

// NudgeAction is what a firing does. The zero value is not an action.
type NudgeAction string

// Nudge actions.
const (
	NudgeRemind NudgeAction = "remind" // a reminder in the chat
	NudgeExpire NudgeAction = "expire" // plan_mode.approval_timeout: the pending plan expires
)

// NudgeStatus is a schedule's life-cycle state. The zero value is not a status.
type NudgeStatus string

// Nudge statuses.
const (
	NudgeActive    NudgeStatus = "active"
	NudgeDone      NudgeStatus = "done"
	NudgeCancelled NudgeStatus = "cancelled"
)

// Nudge is one schedule of a session, as stored. The engine creates schedules in the same
// transaction as the transition that makes a decision pending, and cancels them in the
// transaction of the decision; the nudges package fires them.
type Nudge struct {
	ID         int64 // assigned by the store
	SessionID  string
	PlanID     string // the plan version waiting for a decision; "" for a question
	Kind       NudgeKind
	Action     NudgeAction
	Spec       string    // once: the offset as configured ("10m"); recurring: a cron spec ("@every 2h", "CRON_TZ=Europe/Berlin 0 9 * * 1-5")
	NextFireAt time.Time // zero when nothing is due any more
	Fired      int
	Missed     int
	Status     NudgeStatus
	CreatedAt  time.Time
}

// MissedNudge is an occurrence that was due while plangate was down and is too late to
// deliver (older than plan_mode.nudge_grace).
type MissedNudge struct {
	Nudge       Nudge
	ScheduledAt time.Time
}
