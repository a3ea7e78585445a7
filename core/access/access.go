// Package access decides who may talk to the bot at all and how much, before any message
// reaches a session: access.allowed_users (with access.unlisted_channels) and the
// per-person inbound rate limit access.rate_limit. A Gate holds what it must remember (a
// token bucket per person, who was told they are not let in) in memory, bounded: idle
// people are forgotten. It does no I/O and reads no clock; the caller passes the time.
package access

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/plangate/plangate/core"
)

// Unlisted says what happens on a channel no allowed_users entry names.
type Unlisted string

// The values of access.unlisted_channels. The zero value means UnlistedOpen.
const (
	UnlistedOpen   Unlisted = "open"   // everyone may talk there
	UnlistedClosed Unlisted = "closed" // only approvers may talk there
)

// Rules are the access settings a Gate enforces.
type Rules struct {
	// AllowedUsers are "channel:user id" entries (or platform roles such as
	// "discord-role:id", matched on core.Person.Roles), as access.approvers.
	AllowedUsers []string
	// Listed are the channels some AllowedUsers entry names (a role entry names its
	// platform's channel): on them only listed people and approvers may talk.
	Listed []string
	// Unlisted is what happens on the other channels.
	Unlisted Unlisted
	// Approvers are every approver entry of the configuration (access.approvers and every
	// policy's): they may always talk, and their decisions are never rate limited. With
	// none, decisions are never rate limited for anyone (who may decide depends on the
	// session, which the gate does not read).
	Approvers []string
	// PerMinute is the sustained number of messages a person may send a minute; 0 is no
	// limit. Burst is how many may come at once (at least 1 when PerMinute is set).
	PerMinute int
	Burst     int
}

// Reason says why a message was refused; "" means it was admitted.
type Reason string

// The refusals.
const (
	NotAllowed Reason = "not_allowed" // the sender is not let in on this channel
	Throttled  Reason = "throttled"   // the sender is over the rate limit
)

// Verdict is what the gate decided about one message.
type Verdict struct {
	Refused Reason
	// Reply is what to tell the sender; "" when they were told already (once per
	// RefusalEvery for NotAllowed, once per throttled stretch for Throttled).
	Reply string
}

// RefusalEvery is how often a person who is not let in is told so: one reply per person
// and channel in this window, however many messages they send.
const RefusalEvery = time.Hour

// maxTold bounds how many people the gate remembers telling "not let in": past it (a
// flood of new senders within RefusalEvery) further refusals are silent.
const maxTold = 10_000

// sweepEvery is how often idle entries are forgotten.
const sweepEvery = time.Minute

// Gate admits or refuses inbound messages. It is safe for concurrent use.
type Gate struct {
	r      Rules
	limit  rate.Limit
	refill time.Duration // a bucket left alone this long is full again: a new one is the same

	mu        sync.Mutex
	buckets   map[string]*bucket
	told      map[string]time.Time // sender key -> when told they are not let in
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
	// throttled: the sender was told they are over the limit, and the stretch is not over
	// until their bucket is full again.
	throttled bool
}

// New returns a gate enforcing r.
func New(r Rules) *Gate {
	g := &Gate{r: r, buckets: map[string]*bucket{}, told: map[string]time.Time{}}
	if r.PerMinute > 0 {
		g.r.Burst = max(r.Burst, 1)
		g.limit = rate.Limit(float64(r.PerMinute) / 60)
		g.refill = time.Duration(float64(g.r.Burst) / float64(g.limit) * float64(time.Second))
	}
	return g
}

// Admit decides about message m at time now. decision marks a decision (a /plan command
// only an approver or the owner may give, or a button click), which an approver's
// rate limit never holds back.
func (g *Gate) Admit(now time.Time, m core.Message, decision bool) Verdict {
	if m.Sender.Admin || m.Sender.Operator || m.Sender.IsBot {
		return Verdict{} // the operator's, or a bot's (which the engine ignores anyway)
	}
	key := m.Address.Channel + ":" + m.Sender.ID
	approver := listed(g.r.Approvers, key, m.Sender.Roles)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	if !approver && !g.allowed(key, m) {
		return Verdict{Refused: NotAllowed, Reply: g.tellOnce(now, key)}
	}
	if g.limit == 0 || decision && (approver || len(g.r.Approvers) == 0) {
		return Verdict{}
	}
	b := g.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(g.limit, g.r.Burst)}
		g.buckets[key] = b
	}
	b.last = now
	if b.throttled && b.lim.TokensAt(now) >= float64(g.r.Burst) {
		b.throttled = false
	}
	if b.lim.AllowN(now, 1) {
		return Verdict{}
	}
	if b.throttled {
		return Verdict{Refused: Throttled}
	}
	b.throttled = true
	wait := time.Duration((1 - b.lim.TokensAt(now)) / float64(g.limit) * float64(time.Second))
	return Verdict{Refused: Throttled, Reply: g.slowDown(wait)}
}

// allowed reports whether the sender of m, named key, may talk on m's channel.
func (g *Gate) allowed(key string, m core.Message) bool {
	if listed(g.r.AllowedUsers, key, m.Sender.Roles) {
		return true
	}
	if slices.Contains(g.r.Listed, m.Address.Channel) {
		return false
	}
	return g.r.Unlisted != UnlistedClosed
}

func listed(entries []string, key string, roles []string) bool {
	for _, e := range entries {
		if e == key || slices.Contains(roles, e) {
			return true
		}
	}
	return false
}

// tellOnce returns the not-let-in reply for key unless key was told within RefusalEvery
// (or the gate remembers too many people to remember one more).
func (g *Gate) tellOnce(now time.Time, key string) string {
	if at, ok := g.told[key]; ok && now.Sub(at) < RefusalEvery {
		return ""
	}
	if _, ok := g.told[key]; !ok && len(g.told) >= maxTold {
		return ""
	}
	g.told[key] = now
	return fmt.Sprintf("Sorry, I only talk with people the operator of this bot has let in, and you are not one of them (your id: %s). "+
		"Ask them to add you to access.allowed_users; until then I don't read your messages, and I won't say this again for an hour.", key)
}

// slowDown is the throttled reply; wait is how long until one more message is taken.
func (g *Gate) slowDown(wait time.Duration) string {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	unit := "seconds"
	if secs == 1 {
		unit = "second"
	}
	return fmt.Sprintf("You're writing faster than my limit (%d messages a minute, %d at once), so I didn't read that one. "+
		"Send it again in %d %s; until you slow down, I drop messages over the limit without another word.", g.r.PerMinute, g.r.Burst, secs, unit)
}

// sweep forgets buckets that are full again and refusals older than RefusalEvery, at
// most once per sweepEvery: what it forgets is what a fresh entry would hold.
func (g *Gate) sweep(now time.Time) {
	if now.Sub(g.lastSweep) < sweepEvery {
		return
	}
	g.lastSweep = now
	for k, b := range g.buckets {
		if now.Sub(b.last) >= g.refill {
			delete(g.buckets, k)
		}
	}
	for k, at := range g.told {
		if now.Sub(at) >= RefusalEvery {
			delete(g.told, k)
		}
	}
}

// Remembered reports how many people the gate holds state for (buckets, refusals told):
// what the sweep keeps bounded.
func (g *Gate) Remembered() (buckets, told int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buckets), len(g.told)
}
