package core

import "time"

// Lease says which process may do a piece of work until when: a session's agent turn
// runs only in the process holding the session's lease. A lease that was not renewed
// before it ends, by the store's clock, may be taken over, so a crashed holder's work is
// picked up.
type Lease struct {
	Name  string
	Owner string
	// ExpiresAt is the lease's end on the clock of the caller that took or read it (the
	// now it passed): the store decides expiry by its own clock and gives the end as a
	// distance from that now, so callers whose clocks disagree see the same lease end.
	ExpiresAt time.Time
}

// ToolRunOutcome says how a recorded mutating tool call ended. The zero value means it has
// not finished (or never will: the process died while it ran).
type ToolRunOutcome string

// Tool run outcomes.
const (
	ToolRunOK     ToolRunOutcome = "ok"
	ToolRunFailed ToolRunOutcome = "failed"
)

// ToolRun is a mutating tool call, recorded as started before it runs and as finished
// after: on resume, a run that started and never finished is reported, never repeated.
type ToolRun struct {
	SessionID  string
	CallID     string
	Tool       string
	Detail     string // what people are told: the tool and its paths or argv
	StartedAt  time.Time
	FinishedAt time.Time // zero while unfinished
	Outcome    ToolRunOutcome
}
