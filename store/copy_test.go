package store_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

var c0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

// fill writes one of everything through the store's API.
func fill(t *testing.T, s *store.Store) {
	ctx := context.Background()
	se := core.Session{ID: "s1", Address: core.Address{Channel: "slack", Account: "T1", Chat: "C2"},
		Phase: core.PhaseAwaitingApproval, AutoApprove: true, Owner: "U1", PlanID: "p1", ApprovalID: "a1",
		Question:   &core.Question{ID: "q", Text: "Which?", Options: []string{"a"}, AskedAt: c0},
		Injections: []core.Injection{{Kind: core.InjectAnswer, Text: "a"}}, CreatedAt: c0, UpdatedAt: c0}
	plan := core.Plan{ID: "p1", Version: 1, Status: core.PlanPending, ApprovalID: "a1",
		Body: plan.Body{Title: "t", Steps: []plan.Step{{ID: "s1", Text: "x", Status: plan.StepPending}}}, CreatedAt: c0, UpdatedAt: c0}
	out := []core.Outgoing{{Reply: core.Reply{To: se.Address, Text: "sent"}, CreatedAt: c0},
		{Reply: core.Reply{To: se.Address, Text: "unsent"}, CreatedAt: c0}}
	if _, err := s.Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{plan},
		Inbound:  &core.InboundKey{Channel: "slack", Account: "T1", EventID: "E1"},
		Events:   []core.Event{{Kind: core.EventProposed, Actor: core.AgentActor, At: c0}},
		Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: "hi", At: c0, ToolCalls: []core.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(`{}`)}}}},
		Nudges: []core.Nudge{{Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: "@every 1h", NextFireAt: c0.Add(time.Hour), CreatedAt: c0},
			{Kind: core.NudgeOnce, Action: core.NudgeExpire, Spec: "1d", NextFireAt: c0.Add(24 * time.Hour), CreatedAt: c0}},
		Outbox: out}); err != nil {
		t.Fatal(err)
	}
	ns, _ := s.Nudges(ctx, "s1")
	must(t, s.MarkSent(ctx, out[0].ID, "m1", c0))
	_, err := s.FireNudge(ctx, ns[0].ID, c0.Add(time.Hour), store.NudgeFired, c0.Add(time.Hour), c0.Add(2*time.Hour))
	must(t, err)
	must(t, s.SetChannelState(ctx, "telegram", "b", "offset", "42"))
	_, _, err = s.AcquireLease(ctx, "poller", "r1", c0, time.Minute)
	must(t, err)
	must(t, s.StartToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "c", Tool: "run", Detail: "ls", StartedAt: c0}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot reads everything back through the API.
func snapshot(t *testing.T, s *store.Store) map[string]any {
	ctx := context.Background()
	get := func(v any, err error) any {
		t.Helper()
		must(t, err)
		return v
	}
	return map[string]any{
		"sessions": get(s.Sessions(ctx)), "plans": get(s.Plans(ctx, "")), "events": get(s.Events(ctx, "s1")),
		"transcript": get(s.Transcript(ctx, "s1", 0)), "nudges": get(s.Nudges(ctx, "")), "firings": get(s.NudgeFirings(ctx, 0)),
		"seen":   get(s.SeenInbound(ctx, core.InboundKey{Channel: "slack", Account: "T1", EventID: "E1"})),
		"unsent": get(s.UnsentOutbox(ctx, nil, 0)), "lease": leaseHolder(get(s.Lease(ctx, "poller", time.Now()))), "runs": get(s.ToolRunsOf(ctx, "s1")),
	}
}

// leaseHolder is a lease without its end, which each store gives on the reader's clock
// from its own (PostgreSQL's now()), so it differs between the copies by their clocks.
func leaseHolder(l any) any {
	c := l.(core.Lease)
	return [2]string{c.Name, c.Owner}
}

func TestCopySQLiteToPostgresAndBack(t *testing.T) {
	ctx := context.Background()
	lite := openDriver(t, store.DriverSQLite, filepath.Join(t.TempDir(), "a.db"))
	fill(t, lite)
	want := snapshot(t, lite)

	pg := openDriver(t, store.DriverPostgres, pgtest.Schema(t))
	res, err := store.Copy(ctx, pg, lite)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows["sessions"] != 1 || res.Rows["outbox"] != 2 || res.Rows["nudge_firings"] != 1 {
		t.Fatalf("copied rows %v", res.Rows)
	}
	if got := snapshot(t, pg); !reflect.DeepEqual(got, want) {
		t.Fatalf("PostgreSQL copy reads\n%v\nwant\n%v", got, want)
	}
	if v, ok, err := pg.ChannelState(ctx, "telegram", "b", "offset"); err != nil || !ok || v != "42" {
		t.Fatalf("channel state after copy: %q %v %v", v, ok, err)
	}
	// A non-empty target is refused, naming what it holds.
	if _, err := store.Copy(ctx, pg, lite); err == nil || !strings.Contains(err.Error(), "sessions is not empty") {
		t.Fatalf("second copy: %v", err)
	}
	// New rows get ids after the copied ones.
	out := []core.Outgoing{{Reply: core.Reply{Text: "new"}}}
	if _, err := pg.Commit(ctx, core.Change{SessionID: "s1", Outbox: out,
		Events: []core.Event{{Kind: core.EventAccepted}}}); err != nil {
		t.Fatal(err)
	}
	if unsent := want["unsent"].([]core.Outgoing); out[0].ID <= unsent[0].ID {
		t.Fatalf("new outbox id %d is not after the copied %d", out[0].ID, unsent[0].ID)
	}
	// And back into a new SQLite file.
	back := openDriver(t, store.DriverSQLite, filepath.Join(t.TempDir(), "b.db"))
	if _, err := store.Copy(ctx, back, pg); err != nil {
		t.Fatal(err)
	}
	if got, want := snapshot(t, back), snapshot(t, pg); !reflect.DeepEqual(got, want) {
		t.Fatalf("SQLite copy reads\n%v\nwant\n%v", got, want)
	}
}

func openDriver(t *testing.T, driver, target string) *store.Store {
	t.Helper()
	s, err := store.OpenDriver(context.Background(), driver, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
