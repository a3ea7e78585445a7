package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/plangate/plangate/core"
)

// testSessionPlanInbound: SessionPlan reads the session and its current plan, and with an
// inbound key answers in the same read what SeenInbound answers: a recorded event is
// ErrDuplicate (whatever session it came with, even none stored under the id asked for),
// any other key reads the session as without one.
func testSessionPlanInbound(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	key := core.InboundKey{Channel: "telegram", Account: "bot1", EventID: "update-9"}
	if _, _, err := s.SessionPlan(ctx, "s1", &key); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("no session, key not recorded: err = %v, want ErrNotFound", err)
	}
	se := fullSession("s1")
	pl := fullPlan("s1-p1", "s1", 1)
	stored := commit(t, s, core.Change{Session: &se, Plans: []core.Plan{pl}})
	if got, p, err := s.SessionPlan(ctx, "s1", &key); err != nil || got.Version != stored.Version || p == nil || p.ID != pl.ID {
		t.Fatalf("key not recorded: %+v, %v, %v; want the session and its plan", got, p, err)
	}
	next := stored
	next.LastFeedback = "the message"
	next = commit(t, s, core.Change{Session: &next, Inbound: &key, Lazy: true,
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi", At: at(3)}}})
	// Another instance (replica) sees the record too.
	for i, r := range []Store{s, open()} {
		if got, p, err := r.SessionPlan(ctx, "s1", &key); !errors.Is(err, core.ErrDuplicate) || p != nil || got.ID != "" {
			t.Fatalf("instance %d, recorded key: %+v, %v, %v; want only ErrDuplicate", i, got, p, err)
		}
		if _, _, err := r.SessionPlan(ctx, "nope", &key); !errors.Is(err, core.ErrDuplicate) {
			t.Fatalf("instance %d, recorded key, unknown session: err = %v, want ErrDuplicate", i, err)
		}
	}
	other := key
	other.Account = "bot2" // the key is the triple
	got, p, err := s.SessionPlan(ctx, "s1", &other)
	if err != nil || p == nil {
		t.Fatalf("another account's event: %v, %v", p, err)
	}
	jsonEq(t, "session read with another key", got, next)
	if got, _, err := s.SessionPlan(ctx, "s1", nil); err != nil || got.Version != next.Version {
		t.Fatalf("no key: v%d, %v; want v%d", got.Version, err, next.Version)
	}
	// The connection is still usable after a duplicate and a missing session.
	if _, _, err := s.SessionPlan(ctx, "s1", &other); err != nil {
		t.Fatal(err)
	}
}
