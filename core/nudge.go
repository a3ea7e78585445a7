package core

import (
	"fmt"
	"time"
)

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

// Nudge is one schedule of a session, as stored: created and cancelled in the transactions
// that make a decision pending and make it; the nudges package fires them.
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

// NudgeOff is the Session.NudgeSpec of a session whose reminders are turned off.
const NudgeOff = "off"

// Clock formats a time for chat replies: date and time of day in UTC.
func Clock(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04 MST")
}

// HumanDuration renders a duration the way a person would say it: "45 s", "30 min",
// "2 h", "1 h 30 min", "3 d".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%d h %d min", h, m)
		}
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d d", int(d.Hours())/24)
}
