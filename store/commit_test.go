package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// seed stores a fully populated session with its plan and returns it as stored.
func seed(t *testing.T, s *Store, id string) core.Session {
	t.Helper()
	se := fullSession(id)
	out, err := s.Commit(context.Background(), core.Change{
		Session: &se,
		Plans:   []core.Plan{fullPlan(id+"-p1", id, 1)},
	})
	if err != nil {
		t.Fatalf("seeding %s: %v", id, err)
	}
	return out
}

func TestCommitRoundTripsEveryField(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	se := fullSession("s1")
	plan := fullPlan("s1-p1", "s1", 1)
	plan.ApprovalID = "s1-a1"
	events := []core.Event{
		{PlanID: "s1-p1", PlanVersion: 1, Kind: core.EventProposed, Actor: core.AgentActor, Channel: "slack", Detail: "v1", At: at(4)},
		{SessionID: "s1", Kind: core.EventAccepted, Actor: core.PersonActor("U123"), Channel: "slack", Detail: "by Alice", At: at(5)},
	}
	msgs := []core.ChatMessage{
		{Role: core.RoleUser, Content: "add a changelog", Name: "alice", At: at(6)},
		{Role: core.RoleAssistant, Content: "looking", At: at(7), ToolCalls: []core.ToolCall{
			{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
			{ID: "call_2", Name: "list_files", Args: json.RawMessage(`{}`)},
		}},
		{Role: core.RoleTool, Content: "# readme", ToolCallID: "call_1", Name: "read_file", At: at(8)},
	}
	got, err := s.Commit(ctx, core.Change{
		Session:  &se,
		Plans:    []core.Plan{plan},
		Events:   events,
		Messages: msgs,
		Inbound:  &core.InboundKey{Channel: "slack", Account: "T1", EventID: "Ev1"},
	})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	want := se
	want.Version = 1
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Commit returned\n%+v\nwant\n%+v", got, want)
	}
	read, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, want) {
		t.Fatalf("Session read\n%+v\nwant\n%+v", read, want)
	}

	for _, get := range []func() (core.Plan, error){
		func() (core.Plan, error) { return s.Plan(ctx, "s1-p1") },
		func() (core.Plan, error) { return s.PlanByApproval(ctx, "s1-a1") },
	} {
		p, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, plan) {
			t.Fatalf("plan read\n%+v\nwant\n%+v", p, plan)
		}
	}
	plans, err := s.Plans(ctx, "s1")
	if err != nil || len(plans) != 1 || !reflect.DeepEqual(plans[0], plan) {
		t.Fatalf("Plans = %+v, %v", plans, err)
	}

	evs, err := s.Events(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(events) {
		t.Fatalf("%d events, want %d", len(evs), len(events))
	}
	for i, e := range evs {
		w := events[i]
		w.SessionID = "s1"
		if e.ID == 0 {
			t.Errorf("event %d has no id", i)
		}
		w.ID = e.ID
		if !reflect.DeepEqual(e, w) {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	tr, err := s.Transcript(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr, msgs) {
		t.Fatalf("Transcript = %+v, want %+v", tr, msgs)
	}
	seen, err := s.SeenInbound(ctx, core.InboundKey{Channel: "slack", Account: "T1", EventID: "Ev1"})
	if err != nil || !seen {
		t.Fatalf("SeenInbound = %v, %v; want true", seen, err)
	}
}

func TestCommitUpdateBumpsVersionAndKeepsCreatedAt(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	cur := seed(t, s, "s1")
	for i := 2; i <= 4; i++ {
		cur.Phase = core.PhaseExecuting
		cur.Question = nil
		cur.Injections = nil
		cur.CreatedAt = time.Time{} // must not matter: created_at is immutable
		cur.UpdatedAt = at(10 + i)
		next, err := s.Commit(ctx, core.Change{Session: &cur})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if next.Version != int64(i) {
			t.Fatalf("version = %d, want %d", next.Version, i)
		}
		if !next.CreatedAt.Equal(at(0)) || !next.UpdatedAt.Equal(at(10+i)) {
			t.Fatalf("times = %v / %v", next.CreatedAt, next.UpdatedAt)
		}
		read, err := s.Session(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(read, next) {
			t.Fatalf("read %+v\nreturned %+v", read, next)
		}
		cur = next
	}
}

func TestCommitStampsZeroTimes(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	fixed := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	s.now = func() time.Time { return fixed }
	got, err := s.Commit(ctx, core.Change{
		Session:  &core.Session{ID: "s1", Phase: core.PhasePlanning},
		Plans:    []core.Plan{{ID: "p1", Version: 1, Status: core.PlanPending, Body: plan.Body{Title: "t"}}},
		Events:   []core.Event{{Kind: core.EventEntered}},
		Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "hi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(fixed) || !got.UpdatedAt.Equal(fixed) {
		t.Errorf("session times %v %v, want %v", got.CreatedAt, got.UpdatedAt, fixed)
	}
	p, err := s.Plan(ctx, "p1")
	if err != nil || !p.CreatedAt.Equal(fixed) || !p.UpdatedAt.Equal(fixed) || p.SessionID != "s1" {
		t.Errorf("plan = %+v, %v", p, err)
	}
	evs, _ := s.Events(ctx, "s1")
	tr, _ := s.Transcript(ctx, "s1", 0)
	if len(evs) != 1 || !evs[0].At.Equal(fixed) || len(tr) != 1 || !tr[0].At.Equal(fixed) {
		t.Errorf("events %+v transcript %+v", evs, tr)
	}
}

func TestCommitNormalizesZones(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	zone := time.FixedZone("CET", 3600)
	se := fullSession("s1")
	se.CreatedAt = se.CreatedAt.In(zone)
	se.UpdatedAt = se.UpdatedAt.In(zone)
	se.Question.AskedAt = se.Question.AskedAt.In(zone)
	got, err := s.Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{fullPlan("s1-p1", "s1", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, read) {
		t.Fatalf("returned %+v\nread %+v", got, read)
	}
	if !read.UpdatedAt.Equal(se.UpdatedAt) || read.UpdatedAt.Location() != time.UTC ||
		!read.Question.AskedAt.Equal(se.Question.AskedAt) || read.Question.AskedAt.Location() != time.UTC {
		t.Fatalf("times not kept exactly in UTC: %v %v", read.UpdatedAt, read.Question.AskedAt)
	}
	// The caller's value is not aliased by the returned one.
	got.Question.Options[0] = "changed"
	if se.Question.Options[0] == "changed" {
		t.Fatal("returned session shares memory with the input")
	}
}

func TestCommitWithoutSession(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	got, err := s.Commit(ctx, core.Change{
		SessionID: "s1",
		Events:    []core.Event{{Kind: core.EventRefused, Actor: core.PersonActor("U9")}},
		Messages:  []core.ChatMessage{{Role: core.RoleUser, Content: "hello"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, core.Session{}) {
		t.Fatalf("Commit without session returned %+v, want zero", got)
	}
	evs, _ := s.Events(ctx, "s1")
	tr, _ := s.Transcript(ctx, "s1", 0)
	if len(evs) != 1 || evs[0].SessionID != "s1" || len(tr) != 1 {
		t.Fatalf("events %+v transcript %+v", evs, tr)
	}
	se, _ := s.Session(ctx, "s1")
	if se.Version != 1 {
		t.Fatalf("session version changed to %d", se.Version)
	}
}

func TestCommitRejectsBadChanges(t *testing.T) {
	ctx := context.Background()
	valid := func() *core.Session { se := fullSession("s1"); se.Version = 1; return &se }
	tests := []struct {
		name   string
		ch     core.Change
		target error // errors.Is target, or nil
		want   string
	}{
		{"insert existing", core.Change{Session: &core.Session{ID: "s1", Phase: core.PhaseOff}}, core.ErrConflict, "already exists"},
		{"stale version", core.Change{Session: func() *core.Session { se := valid(); se.Version = 7; return se }()}, core.ErrConflict, "from version 7"},
		{"unknown session update", core.Change{Session: &core.Session{ID: "zz", Phase: core.PhaseOff, Version: 1}}, core.ErrConflict, ""},
		{"invalid phase", core.Change{Session: &core.Session{ID: "s2", Phase: "sleeping"}}, nil, `invalid phase "sleeping"`},
		{"zero phase", core.Change{Session: &core.Session{ID: "s2"}}, nil, `invalid phase ""`},
		{"no session id", core.Change{Session: &core.Session{Phase: core.PhaseOff}}, nil, "session has no id"},
		{"negative rejections", core.Change{Session: &core.Session{ID: "s2", Phase: core.PhaseOff, RejectionCount: -1}}, nil, "negative rejection count"},
		{"ids disagree", core.Change{Session: valid(), SessionID: "other"}, nil, `names session "other"`},
		{"messages without session", core.Change{Messages: []core.ChatMessage{{Role: core.RoleUser}}}, nil, "without a session id"},
		{"event without session", core.Change{Events: []core.Event{{Kind: core.EventEntered}}}, nil, "no session id"},
		{"event of another session", core.Change{SessionID: "s1", Events: []core.Event{{SessionID: "s9", Kind: core.EventEntered}}}, nil, `names session "s9"`},
		{"event without kind", core.Change{SessionID: "s1", Events: []core.Event{{}}}, nil, "empty kind"},
		{"bad role", core.Change{SessionID: "s1", Messages: []core.ChatMessage{{Role: "system"}}}, nil, "CHECK constraint"},
		{"message for unknown session", core.Change{SessionID: "nope", Messages: []core.ChatMessage{{Role: core.RoleUser}}}, nil, "FOREIGN KEY"},
		{"plan bad status", core.Change{SessionID: "s1", Plans: []core.Plan{{ID: "p9", Version: 2, Status: "maybe"}}}, nil, `invalid status "maybe"`},
		{"plan without id", core.Change{SessionID: "s1", Plans: []core.Plan{{Version: 2, Status: core.PlanPending}}}, nil, "empty id"},
		{"plan of another session", core.Change{SessionID: "s1", Plans: []core.Plan{{ID: "p9", SessionID: "s9", Version: 2, Status: core.PlanPending}}}, nil, `names session "s9"`},
		{"plan moved to another session", core.Change{SessionID: "s2", Plans: []core.Plan{{ID: "s1-p1", Version: 1, Status: core.PlanPending}}}, nil, "belongs to another session"},
		{"plan version taken", core.Change{SessionID: "s1", Plans: []core.Plan{{ID: "p9", Version: 1, Status: core.PlanPending}}}, nil, "UNIQUE"},
		{"approval id taken", core.Change{SessionID: "s1", Plans: []core.Plan{{ID: "p9", Version: 2, Status: core.PlanPending, ApprovalID: "s1-a1"}}}, nil, "UNIQUE"},
		{"session points at missing plan", core.Change{Session: func() *core.Session { se := valid(); se.PlanID = "ghost"; return se }()}, nil, "FOREIGN KEY"},
		{"empty inbound id", core.Change{SessionID: "s1", Inbound: &core.InboundKey{Channel: "slack"}}, nil, "empty event id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t)
			seed(t, s, "s1")
			if _, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "s2", Phase: core.PhaseOff}}); err != nil {
				t.Fatal(err)
			}
			// A valid inbound key rides along; it is written first, so this shows that
			// a later failure rolls it back.
			if tt.ch.Inbound == nil {
				tt.ch.Inbound = &core.InboundKey{Channel: "slack", Account: "T1", EventID: "ride-along"}
			}
			before := tableCounts(t, s)
			_, err := s.Commit(ctx, tt.ch)
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.target)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
			// Nothing of a failed change is written.
			if after := tableCounts(t, s); !reflect.DeepEqual(after, before) {
				t.Errorf("failed change wrote rows: before %v, after %v", before, after)
			}
		})
	}
}

func TestOptimisticLocking(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	base := seed(t, s, "s1")

	change := func(tag string) core.Change {
		se := base
		se.LastFeedback = tag
		return core.Change{
			Session:  &se,
			Plans:    []core.Plan{{ID: "plan-" + tag, SessionID: "s1", Version: 2, Status: core.PlanPending, ApprovalID: "appr-" + tag}},
			Events:   []core.Event{{Kind: core.EventProposed, Detail: tag}},
			Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: tag}},
		}
	}
	var (
		wg   sync.WaitGroup
		errs [2]error
		outs [2]core.Session
		tags = [2]string{"a", "b"}
	)
	start := make(chan struct{})
	for i := range 2 {
		wg.Go(func() {
			<-start
			outs[i], errs[i] = s.Commit(ctx, change(tags[i]))
		})
	}
	close(start)
	wg.Wait()

	winner, loser := 0, 1
	if errs[0] != nil {
		winner, loser = 1, 0
	}
	if errs[winner] != nil {
		t.Fatalf("both commits failed: %v / %v", errs[0], errs[1])
	}
	if !errors.Is(errs[loser], core.ErrConflict) {
		t.Fatalf("loser err = %v, want ErrConflict", errs[loser])
	}
	if outs[winner].Version != 2 || outs[winner].LastFeedback != tags[winner] {
		t.Fatalf("winner stored %+v", outs[winner])
	}
	lt := tags[loser]
	if _, err := s.Plan(ctx, "plan-"+lt); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("loser's plan was written (err %v)", err)
	}
	evs, _ := s.Events(ctx, "s1")
	if len(evs) != 1 || evs[0].Detail != tags[winner] {
		t.Errorf("events = %+v, want only the winner's", evs)
	}
	tr, _ := s.Transcript(ctx, "s1", 0)
	if len(tr) != 1 || tr[0].Content != tags[winner] {
		t.Errorf("transcript = %+v, want only the winner's", tr)
	}
	se, _ := s.Session(ctx, "s1")
	if se.Version != 2 || se.LastFeedback != tags[winner] {
		t.Errorf("stored session = %+v", se)
	}
}

func TestDuplicateInboundRollsBackEverything(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	cur := seed(t, s, "s1")
	key := core.InboundKey{Channel: "telegram", Account: "42", EventID: "1001"}
	version := 4
	step := func(tag string, k core.InboundKey) (core.Session, error) {
		version++
		se := cur
		se.LastFeedback = tag
		return s.Commit(ctx, core.Change{
			Session:      &se,
			Plans:        []core.Plan{{ID: "p-" + tag, SessionID: "s1", Version: version, Status: core.PlanPending}},
			Events:       []core.Event{{Kind: core.EventAnswered, Detail: tag}},
			Messages:     []core.ChatMessage{{Role: core.RoleUser, Content: tag}},
			Inbound:      &k,
			CancelNudges: true,
		})
	}
	insertNudge(t, s, "s1", "active")
	next, err := step("first", key)
	if err != nil {
		t.Fatal(err)
	}
	cur = next
	insertNudge(t, s, "s1", "active")

	_, err = step("second", key)
	if !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("err = %v, want ErrDuplicate", err)
	}
	se, _ := s.Session(ctx, "s1")
	if se.Version != cur.Version || se.LastFeedback != "first" {
		t.Errorf("session changed by a duplicate: %+v", se)
	}
	if _, err := s.Plan(ctx, "p-second"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("duplicate's plan written (err %v)", err)
	}
	evs, _ := s.Events(ctx, "s1")
	tr, _ := s.Transcript(ctx, "s1", 0)
	if len(evs) != 1 || len(tr) != 1 {
		t.Errorf("duplicate wrote events %+v / messages %+v", evs, tr)
	}
	if got := nudgeStatuses(t, s, "s1"); !reflect.DeepEqual(got, []string{"cancelled", "active"}) {
		t.Errorf("nudges = %v, the duplicate must not cancel the new one", got)
	}
	// The same event id on another account or channel is a different event.
	other := key
	other.Account = "43"
	if _, err := step("third", other); err != nil {
		t.Fatalf("other account: %v", err)
	}
}

// tableCounts sums up what is stored: the row count of every table and the total of the
// session versions, so a test can show that a failed change wrote nothing at all.
func tableCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, q := range []string{"sessions", "messages", "plans", "plan_events", "nudges", "inbound",
		"channel_state", "schema_migrations"} {
		var n int
		if err := s.r.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[q] = n
	}
	var v int
	if err := s.r.QueryRowContext(context.Background(), `SELECT COALESCE(SUM(version), 0) FROM sessions`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	out["session versions"] = v
	return out
}

// insertNudge writes a nudge row directly; the nudges package will own these later.
func insertNudge(t *testing.T, s *Store, sessionID, status string) {
	t.Helper()
	_, err := s.w.ExecContext(context.Background(), `INSERT INTO nudges (session_id, plan_id, kind, spec,
		next_fire_at, status, created_at) VALUES (?, 'p1', 'once', '10m', ?, ?, ?)`,
		sessionID, formatTime(at(30)), status, formatTime(at(0)))
	if err != nil {
		t.Fatalf("inserting nudge: %v", err)
	}
}

func nudgeStatuses(t *testing.T, s *Store, sessionID string) []string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT status FROM nudges WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

func TestCancelNudges(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	seed(t, s, "s2")
	for _, st := range []string{"active", "done", "active", "cancelled"} {
		insertNudge(t, s, "s1", st)
	}
	insertNudge(t, s, "s2", "active")

	if _, err := s.Commit(ctx, core.Change{SessionID: "s1", CancelNudges: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := nudgeStatuses(t, s, "s1"), []string{"cancelled", "done", "cancelled", "cancelled"}; !reflect.DeepEqual(got, want) {
		t.Errorf("s1 nudges = %v, want %v", got, want)
	}
	if got := nudgeStatuses(t, s, "s2"); !reflect.DeepEqual(got, []string{"active"}) {
		t.Errorf("s2 nudges = %v, another session's nudges were touched", got)
	}
}
