package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store/pgtest"
)

// SessionPlan reads what Session and Plan read, on both drivers: the session with its
// current plan, a session without a plan, and a missing session.
func TestSessionPlan(t *testing.T) {
	for _, driver := range []string{DriverSQLite, DriverPostgres} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "plangate.db")
			if driver == DriverPostgres {
				target = pgtest.Schema(t)
			}
			s, err := OpenDriver(ctx, driver, target)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := seed(t, s, "s1")
			se, p, err := s.SessionPlan(ctx, "s1")
			if err != nil || !reflect.DeepEqual(se, want) || p == nil {
				t.Fatalf("got %+v, %v, %v; want %+v and its plan", se, p, err, want)
			}
			if stored, err := s.Plan(ctx, want.PlanID); err != nil || !reflect.DeepEqual(*p, stored) {
				t.Fatalf("plan %+v, want %+v (%v)", *p, stored, err)
			}
			bare := core.Session{ID: "s2", Phase: core.PhasePlanning}
			if _, err := s.Commit(ctx, core.Change{Session: &bare}); err != nil {
				t.Fatal(err)
			}
			if se, p, err := s.SessionPlan(ctx, "s2"); err != nil || se.ID != "s2" || p != nil {
				t.Fatalf("session without a plan: %+v, %v, %v", se, p, err)
			}
			if _, _, err := s.SessionPlan(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("missing session: %v", err)
			}
			// The connection is still usable after the missing one (its read was ended).
			if _, _, err := s.SessionPlan(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
