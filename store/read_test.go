package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

func TestTranscriptLimit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	seed(t, s, "s2")
	// Ten entries in two commits, interleaved with another session's, all with the same
	// time: order must come from insertion, not from the clock.
	for batch := range 2 {
		var msgs []core.ChatMessage
		for i := range 5 {
			msgs = append(msgs, core.ChatMessage{Role: core.RoleUser, Content: fmt.Sprint(batch*5 + i), At: at(0)})
		}
		if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, core.Change{SessionID: "s2", Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "other"}}}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		limit int
		want  string
	}{
		{0, "0123456789"},
		{-1, "0123456789"},
		{1, "9"},
		{3, "789"},
		{7, "3456789"},
		{10, "0123456789"},
		{50, "0123456789"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("limit ", tt.limit), func(t *testing.T) {
			tr, err := s.Transcript(ctx, "s1", tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, m := range tr {
				b.WriteString(m.Content)
			}
			if b.String() != tt.want {
				t.Fatalf("Transcript(limit %d) = %q, want %q", tt.limit, b.String(), tt.want)
			}
		})
	}
	if tr, err := s.Transcript(ctx, "unknown", 5); err != nil || len(tr) != 0 {
		t.Fatalf("unknown session transcript = %v, %v", tr, err)
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	tests := []struct {
		name string
		call func() error
	}{
		{"session", func() error { _, err := s.Session(ctx, "nope"); return err }},
		{"plan", func() error { _, err := s.Plan(ctx, "nope"); return err }},
		{"plan by approval", func() error { _, err := s.PlanByApproval(ctx, "nope"); return err }},
		{"plan by empty approval", func() error { _, err := s.PlanByApproval(ctx, ""); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		})
	}
	if evs, err := s.Events(ctx, "nope"); err != nil || len(evs) != 0 {
		t.Fatalf("Events(unknown) = %v, %v", evs, err)
	}
	if ps, err := s.Plans(ctx, "nope"); err != nil || len(ps) != 0 {
		t.Fatalf("Plans(unknown) = %v, %v", ps, err)
	}
}

func TestListOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	// Sessions updated at different times; s-b is updated last.
	for i, id := range []string{"s-a", "s-b", "s-c"} {
		se := core.Session{ID: id, Phase: core.PhaseOff, UpdatedAt: at(i)}
		if _, err := s.Commit(ctx, core.Change{Session: &se}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := s.Session(ctx, "s-b")
	b.UpdatedAt = at(10)
	if _, err := s.Commit(ctx, core.Change{Session: &b}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, se := range all {
		ids = append(ids, se.ID)
	}
	if want := []string{"s-b", "s-c", "s-a"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Sessions order = %v, want %v", ids, want)
	}

	// Plans: per session by version, all sessions oldest first.
	plan := func(id, sid string, v, minute int) core.Plan {
		return core.Plan{ID: id, SessionID: sid, Version: v, Status: core.PlanSuperseded, CreatedAt: at(minute)}
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s-a", Plans: []core.Plan{plan("a2", "s-a", 2, 5), plan("a1", "s-a", 1, 1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: "s-c", Plans: []core.Plan{plan("c1", "s-c", 1, 3)}}); err != nil {
		t.Fatal(err)
	}
	planIDs := func(sid string) []string {
		ps, err := s.Plans(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	if got, want := planIDs("s-a"), []string{"a1", "a2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Plans(s-a) = %v, want %v", got, want)
	}
	if got, want := planIDs(""), []string{"a1", "c1", "a2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Plans(all) = %v, want %v", got, want)
	}
}

func TestPlanUpsertKeepsCreatedAt(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	p, err := s.Plan(ctx, "s1-p1")
	if err != nil {
		t.Fatal(err)
	}
	p.Status = core.PlanCompleted
	p.Body.Steps[1].Status = plan.StepCompleted
	p.CreatedAt = time.Time{}
	p.UpdatedAt = at(40)
	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Plans: []core.Plan{p}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Plan(ctx, "s1-p1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != core.PlanCompleted || got.Body.Steps[1].Status != plan.StepCompleted ||
		!got.CreatedAt.Equal(at(1)) || !got.UpdatedAt.Equal(at(40)) {
		t.Fatalf("after update plan = %+v", got)
	}
}

// TestCorruptRows writes bad values straight into the tables (as a bug or a manual edit
// might) and checks that reading them is an error naming the row, never a panic.
func TestCorruptRows(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		sql   string
		read  func(s *Store) error
		wants []string
	}{
		{
			"question of the wrong shape",
			`UPDATE sessions SET question = '{"options": 5}' WHERE id = 's1'`,
			func(s *Store) error { _, err := s.Session(ctx, "s1"); return err },
			[]string{`session "s1"`, "decoding question"},
		},
		{
			"injections not a list",
			`UPDATE sessions SET injections = '{"kind": 1}' WHERE id = 's1'`,
			func(s *Store) error { _, err := s.Sessions(ctx); return err },
			[]string{`session "s1"`, "decoding injections"},
		},
		{
			"bad created_at",
			`UPDATE sessions SET created_at = 'last tuesday' WHERE id = 's1'`,
			func(s *Store) error { _, err := s.Session(ctx, "s1"); return err },
			[]string{`session "s1"`, "created_at", "last tuesday"},
		},
		{
			"plan body not an object",
			`UPDATE plans SET body = '[1, 2]' WHERE id = 's1-p1'`,
			func(s *Store) error { _, err := s.Plan(ctx, "s1-p1"); return err },
			[]string{`plan "s1-p1"`, "decoding body"},
		},
		{
			"plan decision of the wrong shape",
			`UPDATE plans SET decision = '{"at": "soon"}' WHERE id = 's1-p1'`,
			func(s *Store) error { _, err := s.Plans(ctx, ""); return err },
			[]string{`plan "s1-p1"`, "decoding decision"},
		},
		{
			"plan bad updated_at",
			`UPDATE plans SET updated_at = '2025-13-01' WHERE id = 's1-p1'`,
			func(s *Store) error { _, err := s.PlanByApproval(ctx, "s1-a1"); return err },
			[]string{`plan "s1-p1"`, "updated_at"},
		},
		{
			"tool calls of the wrong shape",
			`INSERT INTO messages (id, session_id, role, tool_calls, at) VALUES (77, 's1', 'assistant', '{"id": 1}', '2025-03-14T09:00:00.000000000Z')`,
			func(s *Store) error { _, err := s.Transcript(ctx, "s1", 0); return err },
			[]string{"message 77", "decoding tool calls"},
		},
		{
			"message bad time",
			`INSERT INTO messages (id, session_id, role, at) VALUES (78, 's1', 'user', 'noon')`,
			func(s *Store) error { _, err := s.Transcript(ctx, "s1", 1); return err },
			[]string{"message 78", "noon"},
		},
		{
			"event bad time",
			`INSERT INTO plan_events (id, session_id, kind, at) VALUES (90, 's1', 'entered', '')`,
			func(s *Store) error { _, err := s.Events(ctx, "s1"); return err },
			[]string{"event 90", "parsing at"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t)
			seed(t, s, "s1")
			if _, err := s.w.ExecContext(ctx, tt.sql); err != nil {
				t.Fatalf("corrupting: %v", err)
			}
			err := tt.read(s)
			if err == nil {
				t.Fatal("reading a corrupt row succeeded")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSchemaRejectsInvalidJSON(t *testing.T) {
	s, _ := openTest(t)
	seed(t, s, "s1")
	_, err := s.w.ExecContext(context.Background(), `UPDATE sessions SET question = '{not json' WHERE id = 's1'`)
	if err == nil || !strings.Contains(err.Error(), "CHECK constraint") {
		t.Fatalf("storing invalid JSON = %v, want a CHECK failure", err)
	}
}

func TestCanceledContext(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "s1", Phase: core.PhaseOff}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with canceled ctx = %v", err)
	}
	if _, err := s.Session(context.Background(), "s1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a canceled commit was stored (err %v)", err)
	}
	if _, err := s.Sessions(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sessions with canceled ctx = %v", err)
	}
}
