package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/store/pgtest"
)

// Migration 0013 turns the one requested_by of a session and of a plan into their only
// requester, on both drivers: a database from before it keeps who asked.
func TestRequestedByBecomesTheRequesters(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"sqlite", func(t *testing.T) *Store {
			s, err := Open(ctx, filepath.Join(t.TempDir(), "plangate.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"postgres", func(t *testing.T) *Store {
			s, err := OpenPostgres(ctx, pgtest.Schema(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.open(t)
			defer s.Close()
			now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			se := core.Session{ID: "s1", Address: core.Address{Channel: "slack", Account: "T1", Chat: "C1"}, Phase: core.PhaseAwaitingApproval,
				PlanID: "p1", ApprovalID: "a1", CreatedAt: now, UpdatedAt: now}
			p := core.Plan{ID: "p1", SessionID: "s1", Version: 1, Status: core.PlanPending, ApprovalID: "a1",
				Body: plan.Body{Title: "Docs", Steps: []plan.Step{{ID: "1", Text: "Reword", Status: plan.StepPending}}}, CreatedAt: now, UpdatedAt: now}
			if _, err := s.Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{p}}); err != nil {
				t.Fatal(err)
			}
			// The schema before 0013, with the rows it had then.
			for _, q := range []string{
				`ALTER TABLE sessions ADD COLUMN requested_by TEXT NOT NULL DEFAULT ''`,
				`ALTER TABLE plans ADD COLUMN requested_by TEXT NOT NULL DEFAULT ''`,
				`UPDATE sessions SET requested_by = 'slack:U7'`,
				`UPDATE plans SET requested_by = 'slack:U7'`,
				`ALTER TABLE sessions DROP COLUMN requesters`,
				`ALTER TABLE plans DROP COLUMN requesters`,
				`ALTER TABLE plans DROP COLUMN run`,       // added by 0017, replayed below
				`ALTER TABLE sessions DROP COLUMN tokens`, // added by 0018, replayed below
				`ALTER TABLE plans DROP COLUMN prompt_tokens`,
				`ALTER TABLE plans DROP COLUMN cached_tokens`,
				`ALTER TABLE plans DROP COLUMN completion_tokens`,
				`ALTER TABLE plans DROP COLUMN model_calls`,
				`ALTER TABLE plans DROP COLUMN unreported_calls`,
				`DELETE FROM schema_migrations WHERE version >= 13`,
			} {
				if _, err := s.w.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := migrate(ctx, s.w, time.Now); err != nil {
				t.Fatal(err)
			}
			want := []core.Requester{{By: "slack:U7"}}
			got, err := s.Session(ctx, "s1")
			if err != nil || len(got.Requesters) != 1 || got.Requesters[0] != want[0] {
				t.Errorf("session requesters after 0013 = %+v (%v), want %+v", got.Requesters, err, want)
			}
			gp, err := s.Plan(ctx, "p1")
			if err != nil || len(gp.Requesters) != 1 || gp.Requesters[0] != want[0] {
				t.Errorf("plan requesters after 0013 = %+v (%v), want %+v", gp.Requesters, err, want)
			}
		})
	}
}
