package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plangate/plangate/store/pgtest"
)

// A single statement is committed in the batch that runs it (oneTrip). On a pool of one
// connection, a failed statement, a statement that affects no row and a success must each
// leave the connection usable and report their own outcome; a transition with checked
// outcomes keeps its separate COMMIT.
func TestPostgresOneTrip(t *testing.T) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, pgtest.Schema(t)+" pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ins := func(owner any) []step {
		return []step{{what: "writing", q: `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET expires_at = excluded.expires_at WHERE leases.owner = excluded.owner`,
			args: []any{"l1", owner, formatTime(time.Unix(100, 0))}, none: errUnchanged}}
	}
	for _, lazy := range []bool{false, true} {
		if err := s.runSteps(ctx, ins(nil), lazy); err == nil {
			t.Fatal("a NULL owner was accepted")
		}
		if err := s.runSteps(ctx, ins("a"), lazy); err != nil {
			t.Fatalf("lazy=%v: after a failed statement: %v", lazy, err)
		}
		if err := s.runSteps(ctx, ins("b"), lazy); !errors.Is(err, errUnchanged) {
			t.Fatalf("lazy=%v: no row affected gave %v, want errUnchanged", lazy, err)
		}
		l, err := s.Lease(ctx, "l1", time.Unix(0, 0))
		if err != nil || l.Owner != "a" {
			t.Fatalf("lazy=%v: lease is %+v, %v; want owner a", lazy, l, err)
		}
		if err := s.runSteps(ctx, []step{{what: "deleting", q: `DELETE FROM leases WHERE name = ?`, args: []any{"l1"}}}, lazy); err != nil {
			t.Fatal(err)
		}
	}
	// Two checked steps: the first one's write must not survive the second's refusal.
	two := append(ins("c"), ins("d")...)
	if oneTrip(two) {
		t.Fatal("two checked steps taken for one trip")
	}
	if err := s.runSteps(ctx, two, false); !errors.Is(err, errUnchanged) {
		t.Fatalf("second step refused gave %v", err)
	}
	if l, err := s.Lease(ctx, "l1", time.Unix(0, 0)); err == nil {
		t.Fatalf("the refused transaction left %+v", l)
	}
}
