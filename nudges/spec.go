package nudges

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MinInterval is the shortest @every interval accepted: tests and demos use seconds, and
// anything shorter would only flood the chat.
const MinInterval = time.Second

// Specs checks and evaluates the recurring schedules people set with /plan nudge. It is
// the engine's machine.NudgeSpecs port: the command grammar only normalizes a spec's text,
// and what a valid cron spec is stays here, next to the scheduler that fires it.
type Specs struct{}

// Check validates a normalized spec (5 fields or a descriptor such as @daily or
// @every 2h, with an optional CRON_TZ= or TZ= prefix). The error says why, in words a
// person can act on.
func (Specs) Check(spec string, now time.Time) error {
	if strings.TrimSpace(spec) == "" {
		return errors.New("empty spec")
	}
	if i := strings.Index(spec, "TZ="); i >= 0 && !strings.Contains(spec[i:], " ") {
		// robfig/cron panics on a time-zone prefix with nothing after it.
		return errors.New("a time zone needs a schedule after it")
	}
	sched, err := newParser().Parse(spec)
	if err != nil {
		return err
	}
	if i := strings.Index(spec, "@every "); i >= 0 {
		// cron rounds sub-second intervals up silently; refuse them like every <duration>.
		if d, err := time.ParseDuration(spec[i+len("@every "):]); err == nil && d < MinInterval {
			return fmt.Errorf("@every must be at least %s", MinInterval)
		}
	}
	if sched.Next(now).IsZero() {
		return errors.New("it never fires")
	}
	return nil
}

// Next returns the first time after `after` at which spec fires.
func (Specs) Next(spec string, after time.Time) (time.Time, error) {
	sched, err := newParser().Parse(spec)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing nudge schedule %q: %w", spec, err)
	}
	next := sched.Next(after)
	if next.IsZero() {
		return time.Time{}, fmt.Errorf("nudge schedule %q never fires", spec)
	}
	return next, nil
}
