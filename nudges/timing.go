package nudges

import (
	"time"

	"github.com/robfig/cron/v3"
)

// newParser is plangate's one cron parser (Specs and the scheduler): five fields,
// descriptors (@daily, @every 2h) and an optional CRON_TZ= prefix.
func newParser() cron.Parser {
	return cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
}

// fastSteps is how many occurrences catchUp walks one by one before it searches backwards
// from now instead; a schedule that is behind by more than this was down a long time.
const fastSteps = 64

// catchUp takes a schedule whose stored occurrence due is at or before now and returns the
// occurrence to act on, the latest at or before now, and the first after now: a recurring
// schedule that missed many occurrences fires (or is recorded missed) once, never in a
// burst. sched nil is a one-shot: due itself, and no next. Occurrences are counted from
// the stored one, not from now, so @every 2h keeps its rhythm; specs without CRON_TZ= use
// the local zone, as when the engine computed the first time.
func catchUp(sched cron.Schedule, due, now time.Time) (occ, next time.Time) {
	if sched == nil {
		return due, time.Time{}
	}
	if cd, ok := sched.(cron.ConstantDelaySchedule); ok && cd.Delay > 0 {
		// @every: due, then whole seconds in steps of Delay; arithmetic, however long the gap.
		next = cd.Next(due).UTC()
		if next.After(now) {
			return due, next
		}
		occ = next.Add(now.Sub(next) / cd.Delay * cd.Delay)
		return occ, cd.Next(occ).UTC()
	}
	occ, next = due, nextAfter(sched, due)
	for i := 0; !next.IsZero() && !next.After(now); i++ {
		if i == fastSteps {
			return searchBack(sched, occ, now)
		}
		occ, next = next, nextAfter(sched, next)
	}
	return occ, next
}

// searchBack finds the last occurrence at or before now of a calendar schedule far behind
// (occ is old and the next is due too): calendar specs fire at the same times wherever a
// search starts, so it looks back from now in growing windows rather than walking every
// occurrence since occ (a minute schedule down for a year is half a million steps).
func searchBack(sched cron.Schedule, occ, now time.Time) (time.Time, time.Time) {
	for w := time.Hour; ; w *= 2 {
		from := now.Add(-w)
		clamped := !from.After(occ)
		if clamped {
			from = occ
		}
		t := nextAfter(sched, from)
		if t.IsZero() || t.After(now) {
			if clamped { // cannot happen for a valid schedule; never loop forever
				return occ, t
			}
			continue
		}
		next := nextAfter(sched, t)
		for !next.IsZero() && !next.After(now) {
			t, next = next, nextAfter(sched, next)
		}
		return t, next
	}
}

// nextAfter is sched.Next in the local time zone, returned in UTC (the store's zone).
func nextAfter(sched cron.Schedule, t time.Time) time.Time {
	n := sched.Next(t.In(time.Local))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}
