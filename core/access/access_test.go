package access_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/access"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func msg(channel, id string) core.Message {
	return core.Message{Address: core.Address{Channel: channel, Account: "bot", Chat: "c1"}, Sender: core.Person{ID: id}}
}

func TestWhoMayTalk(t *testing.T) {
	rules := access.Rules{
		AllowedUsers: []string{"telegram:1", "discord-role:9"},
		Listed:       []string{"telegram", "discord"},
		Approvers:    []string{"telegram:7", "slack:U7"},
	}
	role := msg("discord", "55")
	role.Sender.Roles = []string{"discord-role:9"}
	admin, operator, bot := msg("telegram", "admin:ops"), msg("terminal", "local"), msg("telegram", "66")
	admin.Sender.Admin, operator.Sender.Operator, bot.Sender.IsBot = true, true, true
	for _, tc := range []struct {
		name     string
		unlisted access.Unlisted
		m        core.Message
		want     access.Reason
	}{
		{"listed user", access.UnlistedOpen, msg("telegram", "1"), ""},
		{"unlisted user on a listed channel", access.UnlistedOpen, msg("telegram", "2"), access.NotAllowed},
		{"same id, other channel", access.UnlistedOpen, msg("discord", "1"), access.NotAllowed},
		{"role entry", access.UnlistedOpen, role, ""},
		{"approver on a listed channel", access.UnlistedOpen, msg("telegram", "7"), ""},
		{"anyone on an open channel", access.UnlistedOpen, msg("slack", "U2"), ""},
		{"anyone on a closed channel", access.UnlistedClosed, msg("slack", "U2"), access.NotAllowed},
		{"approver on a closed channel", access.UnlistedClosed, msg("slack", "U7"), ""},
		{"the admin API", access.UnlistedClosed, admin, ""},
		{"the terminal's operator", access.UnlistedClosed, operator, ""},
		{"someone else at the terminal", access.UnlistedClosed, msg("terminal", "bob"), access.NotAllowed},
		{"a bot is left to the engine", access.UnlistedClosed, bot, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rules
			r.Unlisted = tc.unlisted
			v := access.New(r).Admit(t0, tc.m, false)
			if v.Refused != tc.want {
				t.Fatalf("Refused = %q, want %q", v.Refused, tc.want)
			}
			if (v.Reply != "") != (tc.want != "") {
				t.Fatalf("Reply = %q for refusal %q", v.Reply, tc.want)
			}
		})
	}
}

// TestNotAllowedToldOncePerWindow: a spammer who is not let in hears it once per
// RefusalEvery, however many messages they send; another person is told on their own.
func TestNotAllowedToldOncePerWindow(t *testing.T) {
	g := access.New(access.Rules{AllowedUsers: []string{"slack:U1"}, Listed: []string{"slack"}})
	spam := msg("slack", "U666")
	first := g.Admit(t0, spam, false)
	if first.Refused != access.NotAllowed || !strings.Contains(first.Reply, "slack:U666") || !strings.Contains(first.Reply, "access.allowed_users") {
		t.Fatalf("first refusal = %+v, want the sender's id and the key to ask for", first)
	}
	told := 1
	for i := 1; i < 500; i++ {
		v := g.Admit(t0.Add(time.Duration(i)*time.Second), spam, i%2 == 0)
		if v.Refused != access.NotAllowed {
			t.Fatalf("message %d admitted", i)
		}
		if v.Reply != "" {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("told %d times within the window, want 1", told)
	}
	if v := g.Admit(t0, msg("slack", "U667"), false); v.Reply == "" {
		t.Fatal("another person was not told")
	}
	if v := g.Admit(t0.Add(access.RefusalEvery), spam, false); v.Refused != access.NotAllowed || v.Reply == "" {
		t.Fatalf("after the window: %+v, want a refusal told again", v)
	}
}

// TestThrottledStretch: over the limit, one reply per stretch; a person sending steadily
// faster than the rate stays in one stretch; once the bucket is full again a new stretch
// gets its own reply.
func TestThrottledStretch(t *testing.T) {
	g := access.New(access.Rules{PerMinute: 6, Burst: 2}) // one every 10 s, two at once
	m := msg("telegram", "5")
	at := func(d time.Duration) access.Verdict { return g.Admit(t0.Add(d), m, false) }
	for i, want := range []access.Reason{"", "", access.Throttled} {
		if v := at(0); v.Refused != want {
			t.Fatalf("message %d at once: %q, want %q", i, v.Refused, want)
		}
	}
	v := at(time.Second)
	if v.Refused != access.Throttled || v.Reply != "" {
		t.Fatalf("second over the limit: %+v, want dropped silently", v)
	}
	first := access.New(access.Rules{PerMinute: 6, Burst: 2})
	first.Admit(t0, m, false)
	first.Admit(t0, m, false)
	if r := first.Admit(t0, m, false).Reply; !strings.Contains(r, "10 seconds") || !strings.Contains(r, "6 messages a minute") {
		t.Fatalf("throttled reply = %q, want the wait and the limit", r)
	}
	// One message every 5 s: every other one is taken, and none is told again.
	admitted, told := 0, 0
	for s := 5; s <= 120; s += 5 {
		v := at(time.Duration(s) * time.Second)
		if v.Refused == "" {
			admitted++
		}
		if v.Reply != "" {
			told++
		}
	}
	if told != 0 || admitted < 11 || admitted > 13 {
		t.Fatalf("steady spam: admitted %d, told %d; want about 12 admitted and no second reply", admitted, told)
	}
	// Quiet for a full refill (20 s), then a burst over the limit: a new stretch.
	base := 150 * time.Second
	at(base)
	at(base)
	if v := at(base); v.Refused != access.Throttled || v.Reply == "" {
		t.Fatalf("new stretch: %+v, want a reply", v)
	}
}

// TestDecisionsOfApprovers: an approver's decisions pass a full bucket and do not use it;
// a non-approver's count like any message; with no approvers listed, nobody's do.
func TestDecisionsOfApprovers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		approvers []string
		sender    string
		want      access.Reason
	}{
		{"approver", []string{"slack:U1"}, "U1", ""},
		{"not an approver", []string{"slack:U1"}, "U2", access.Throttled},
		{"no approvers listed", nil, "U2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := access.New(access.Rules{PerMinute: 1, Burst: 1, Approvers: tc.approvers})
			m := msg("slack", tc.sender)
			if v := g.Admit(t0, m, false); v.Refused != "" {
				t.Fatalf("first message refused: %+v", v)
			}
			for i := range 3 {
				if v := g.Admit(t0, m, true); v.Refused != tc.want {
					t.Fatalf("decision %d: %q, want %q", i, v.Refused, tc.want)
				}
			}
			if v := g.Admit(t0, m, false); v.Refused != access.Throttled {
				t.Fatalf("text over the limit: %+v, want throttled", v)
			}
		})
	}
}

// TestIdleForgotten: people who stopped writing are forgotten once their bucket is full
// again (refusals once their window passed), so memory follows who is active.
func TestIdleForgotten(t *testing.T) {
	g := access.New(access.Rules{PerMinute: 60, Burst: 5, AllowedUsers: []string{"slack:U1"}, Listed: []string{"slack"}})
	for i := range 1000 {
		g.Admit(t0, msg("telegram", fmt.Sprint(i)), false)
		g.Admit(t0, msg("slack", fmt.Sprint(i)), false)
	}
	if b, told := g.Remembered(); b != 1000 || told != 1000 {
		t.Fatalf("remembered %d buckets, %d refusals; want 1000 each", b, told)
	}
	g.Admit(t0.Add(2*time.Minute), msg("telegram", "new"), false)
	if b, told := g.Remembered(); b != 1 || told != 1000 {
		t.Fatalf("after 2 min: %d buckets, %d refusals; want 1 and 1000", b, told)
	}
	g.Admit(t0.Add(access.RefusalEvery+2*time.Minute), msg("telegram", "new"), false)
	if _, told := g.Remembered(); told != 0 {
		t.Fatalf("after the window: %d refusals remembered, want 0", told)
	}
}

func TestNoLimitByDefault(t *testing.T) {
	g := access.New(access.Rules{})
	for i := range 1000 {
		if v := g.Admit(t0, msg("telegram", "1"), false); v.Refused != "" {
			t.Fatalf("message %d refused by a zero Rules: %+v", i, v)
		}
	}
	if b, _ := g.Remembered(); b != 0 {
		t.Fatalf("a gate without a limit keeps %d buckets", b)
	}
}
