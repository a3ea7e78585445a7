// Package storetest is the contract every store driver passes: the same checks run
// against SQLite and PostgreSQL, so "the same guarantees on both drivers" is a test, not
// a promise. A driver's test calls Run with a factory that prepares an empty database
// and returns a function opening a store on it; opening twice gives two instances on one
// database, which is how the suite checks what several replicas rely on (exactly one
// of two racing commits wins, every nudge occurrence is claimed once, a lease has one
// holder).
//
// The suite asserts observable behaviour only, through the methods of Store; it never
// looks at tables, so it cannot pass by agreeing with an implementation detail.
package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/store"
)

// Store is every method of a store that core, the adapters, the nudge scheduler and the
// commands use. *store.Store satisfies it for each driver.
type Store interface {
	core.Store
	Close() error
	Ping(ctx context.Context) error

	SessionsAfter(ctx context.Context, phase core.Phase, updated time.Time, id string, limit int) ([]core.Session, error)
	WaitingSessions(ctx context.Context) ([]core.Session, error)
	EventsAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, error)

	PruneInbound(ctx context.Context, olderThan time.Time) (int64, error)
	Prune(ctx context.Context, r store.Retention, now time.Time, opt store.PruneOptions) (store.Pruned, error)
	ChannelState(ctx context.Context, channel, account, key string) (string, bool, error)
	SetChannelState(ctx context.Context, channel, account, key, value string) error
	DeleteChannelState(ctx context.Context, channel, account, key, value string) (bool, error)
	SetChannelStateWith(ctx context.Context, channel, account, key string, lazy bool, value func() (string, error)) error

	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error)
	ReleaseLease(ctx context.Context, name, owner string) error
	Leases(ctx context.Context, prefix string, now time.Time) ([]core.Lease, error)

	SignOut(ctx context.Context, nonce string, until time.Time) error
	SignedOut(ctx context.Context, nonce string) (bool, error)
	PruneSignOuts(ctx context.Context, now time.Time) (int64, error)

	StartToolRun(ctx context.Context, r core.ToolRun) error
	FinishToolRun(ctx context.Context, r core.ToolRun) error
	UnfinishedToolRuns(ctx context.Context, sessionID string) ([]core.ToolRun, error)
	ToolRunsOf(ctx context.Context, sessionID string) ([]core.ToolRun, error)

	UnsentOutbox(ctx context.Context, channels []string, limit int) ([]core.Outgoing, error)
	MarkSent(ctx context.Context, id int64, platformID string, at time.Time) error
	SentSince(ctx context.Context, channel string, since time.Time, limit int) ([]core.Outgoing, error)
	ClaimOutbox(ctx context.Context, id int64, attempts int) (bool, error)
	DropOutbox(ctx context.Context, id int64, why string) error
	DroppedOutbox(ctx context.Context, before int64, limit int) ([]core.Outgoing, error)
	NoteOutboxAttempt(ctx context.Context, id int64) error
	PruneOutbox(ctx context.Context, olderThan time.Time) (int64, error)

	ActiveNudges(ctx context.Context) ([]core.Nudge, error)
	FireNudge(ctx context.Context, id int64, scheduledAt time.Time, outcome string, firedAt, next time.Time) (bool, error)
	NudgeFirings(ctx context.Context, id int64) ([]store.NudgeFiring, error)
}

var _ Store = (*store.Store)(nil)

// Factory prepares an empty database for one test and returns how to open a store on
// it. Each call of open returns a new instance on the same database; the suite closes
// every instance it opens.
type Factory func(t *testing.T) (open func() Store)

// Run runs the whole contract as subtests of t.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open func() Store)
	}{
		{"SessionRoundTrip", testSessionRoundTrip},
		{"SessionCAS", testSessionCAS},
		{"SessionsOrder", testSessionsOrder},
		{"Pages", testPages},
		{"WaitingSessions", testWaitingSessions},
		{"Plans", testPlans},
		{"Tokens", testTokens},
		{"EventsAndTranscript", testEventsAndTranscript},
		{"InboundDuplicate", testInboundDuplicate},
		{"SessionPlanInbound", testSessionPlanInbound},
		{"Atomicity", testAtomicity},
		{"LazyCommitVisible", testLazyCommitVisible},
		{"Nudges", testNudges},
		{"FireNudge", testFireNudge},
		{"ChannelState", testChannelState},
		{"ChannelStateWith", testChannelStateWith},
		{"Leases", testLeases},
		{"SignOuts", testSignOuts},
		{"ToolRuns", testToolRuns},
		{"Outbox", testOutbox},
		{"MarkSent", testMarkSent},
		{"Pruning", testPruning},
		{"Retention", testRetention},
		{"RacingCommits", testRacingCommits},
		{"RacingInserts", testRacingInserts},
		{"RacingInbound", testRacingInbound},
		{"RacingNudgeClaims", testRacingNudgeClaims},
		{"RacingLeases", testRacingLeases},
		{"RacingLeaseRelease", testRacingLeaseRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := f(t)
			tt.fn(t, func() Store {
				s := open()
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				return s
			})
		})
	}
}

// t0 has nanoseconds on purpose: both drivers must round-trip times exactly.
var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

// fullSession has every field set, including a question and queued injections.
func fullSession(id string) core.Session {
	return core.Session{
		ID:             id,
		Address:        core.Address{Channel: "slack", Account: "T1", Chat: "C2", Thread: "1700000000.0001"},
		Phase:          core.PhaseAwaitingApproval,
		AutoApprove:    true,
		Owner:          "U123",
		PlanID:         id + "-p1",
		ApprovalID:     id + "-a1",
		RejectionCount: 2,
		LastFeedback:   "smaller steps, please",
		NudgeSpec:      "@every 2h",
		Requesters:     []core.Requester{{By: "slack:U7", Name: "Uma"}, {By: "slack:U8"}},
		Question: &core.Question{ID: "q1", Text: "Which database?", Options: []string{"sqlite", "postgres"},
			AllowFreeText: true, AskedAt: at(1)},
		Injections: []core.Injection{
			{Kind: core.InjectDecision, Text: "[PLAN_DECISION]: rejected"},
			{Kind: core.InjectAnswer, Text: "[QUESTION_ANSWER]: sqlite ✓"},
		},
		Tokens: core.SessionTokens{All: plan.Tokens{Prompt: 41_000, Cached: 30_000, Completion: 900, Calls: 7, Unreported: 1},
			Day: "2025-03-14", Today: plan.Tokens{Prompt: 9000, Cached: 8000, Completion: 100, Calls: 2},
			Planning: plan.Tokens{Prompt: 3000, Completion: 50, Calls: 1}},
		CreatedAt: at(0),
		UpdatedAt: at(2),
	}
}

// plainSession is the smallest valid session.
func plainSession(id string) core.Session {
	return core.Session{ID: id, Address: core.Address{Channel: "terminal", Account: "local", Chat: id},
		Phase: core.PhasePlanning, CreatedAt: at(0), UpdatedAt: at(0)}
}

// fullPlan has every field set, including a decision and every part of the body.
func fullPlan(id, sessionID string, version int) core.Plan {
	return core.Plan{
		ID: id, SessionID: sessionID, Version: version, Status: core.PlanAccepted,
		ApprovalID: id + "-a",
		Body: plan.Body{
			Title: "Add a changelog", Summary: "Create CHANGELOG.md & link it",
			Steps: []plan.Step{
				{ID: "s1", Text: "Create CHANGELOG.md", Status: plan.StepCompleted,
					AcceptanceCriteria: []string{"file exists"}, VerifiedCriteria: []string{"file exists"}},
				{ID: "s2", Text: "Link it from README", Status: plan.StepInProgress},
			},
			Assumptions:  []string{"README.md exists"},
			Risks:        []plan.Risk{{Risk: "merge conflict", Mitigation: "small diff"}},
			Verification: plan.Words("cat CHANGELOG.md"),
			Scope:        plan.Scope{AllowedPaths: []string{"*.md"}, ForbiddenPaths: []string{".git/**"}},
			References:   []string{"https://keepachangelog.com"},
		},
		Hash: "sha256:abc", File: "slack-C2/plan-v1.md",
		Decision:   &plan.Decision{By: "U123", ByName: "Alice", At: at(3), Channel: "slack", Outcome: "accepted", Feedback: "ok"},
		Approvals:  []plan.Approval{{By: "slack:U9", ByName: "Bob", At: at(2), Version: version}},
		Requesters: []core.Requester{{By: "slack:U7", Name: "Uma"}}, EditedBy: "slack:U9",
		CreatedAt: at(1), UpdatedAt: at(3),
	}
}

// commit commits ch or fails the test.
func commit(t *testing.T, s Store, ch core.Change) core.Session {
	t.Helper()
	out, err := s.Commit(context.Background(), ch)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return out
}

// seed stores a plain session and returns it as stored.
func seed(t *testing.T, s Store, id string) core.Session {
	t.Helper()
	se := plainSession(id)
	return commit(t, s, core.Change{Session: &se})
}

// jsonEq compares two values by their JSON encoding, which is how the drivers store
// the nested parts and what callers see of them.
func jsonEq(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: encoding: %v %v", what, err1, err2)
	}
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}
