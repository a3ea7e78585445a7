package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/core/conf"
	"github.com/plangate/plangate/store"
)

// RetentionConfig is store.retention: how long each kind of row is kept, by age (0 =
// forever). Sessions, plans, nudges and every row of a session awaiting a decision or
// executing are never pruned.
type RetentionConfig struct {
	Transcripts Age `yaml:"transcripts"` // the agent's history (messages)
	Outbox      Age `yaml:"outbox"`      // replies sent or given up; unsent ones are never pruned
	Inbound     Age `yaml:"inbound"`     // platform event ids kept for de-duplication
	Audit       Age `yaml:"audit"`       // the audit log (plan_events)
}

// defaultRetention keeps three months of transcripts, a month of delivered replies, two
// days of event ids (platforms redeliver within minutes) and a year of audit rows.
func defaultRetention() RetentionConfig {
	return RetentionConfig{Transcripts: 90 * Day, Outbox: 30 * Day, Inbound: 48 * Age(time.Hour), Audit: 365 * Day}
}

// minInbound is the shortest store.retention.inbound: Slack retries an event for up to
// an hour, and a forgotten id would be answered twice.
const minInbound = Age(2 * time.Hour)

// check refuses negative ages and an inbound window shorter than redeliveries; its keys
// are within the store section.
func (r RetentionConfig) check() error {
	errs := []error{
		checkNotNegative("retention.transcripts", time.Duration(r.Transcripts)),
		checkNotNegative("retention.outbox", time.Duration(r.Outbox)),
		checkNotNegative("retention.inbound", time.Duration(r.Inbound)),
		checkNotNegative("retention.audit", time.Duration(r.Audit)),
	}
	if r.Inbound > 0 && r.Inbound < minInbound {
		errs = append(errs, conf.Invalid("retention.inbound", "is %s: keep event ids at least %s (platforms redeliver for up to an hour), or 0 to keep them forever", r.Inbound, minInbound))
	}
	return errors.Join(errs...)
}

// retention is what the pruner keeps. Delivered replies stay at least a day past
// outboxMaxAge, the window in which a reply is still being delivered.
func (r RetentionConfig) retention(outboxMaxAge time.Duration) store.Retention {
	outbox := time.Duration(r.Outbox)
	if floor := outboxMaxAge + 24*time.Hour; outbox > 0 && outbox < floor {
		outbox = floor
	}
	return store.Retention{Transcripts: time.Duration(r.Transcripts), Outbox: outbox,
		Inbound: time.Duration(r.Inbound), Audit: time.Duration(r.Audit)}
}

// Age is a duration written with Go's units or in whole days: 90d, 48h, 30m, 0.
type Age time.Duration

// Day is an Age of 24 hours.
const Day = Age(24 * time.Hour)

// UnmarshalText reads "90d", "36h", "1h30m" or "0".
func (a *Age) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 100*365 {
			return fmt.Errorf("%q is not an age such as 90d, 48h or 0", s)
		}
		*a = Age(n) * Day
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not an age such as 90d, 48h or 0", s)
	}
	*a = Age(d)
	return nil
}

// String writes whole days as "90d", anything else as Go writes a duration.
func (a Age) String() string {
	if a != 0 && a%Day == 0 {
		return strconv.FormatInt(int64(a/Day), 10) + "d"
	}
	return time.Duration(a).String()
}
