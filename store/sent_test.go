package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

func TestSentSinceSQLite(t *testing.T) {
	testSentSince(t, mustOpen(t, store.DriverSQLite, filepath.Join(t.TempDir(), "plangate.db")))
}

func TestSentSincePostgres(t *testing.T) {
	testSentSince(t, mustOpen(t, store.DriverPostgres, pgtest.Schema(t)))
}

// SentSince lists a channel's replies marked sent after a time, in the order they were
// sent (not by id), and nothing unsent or of another channel.
func testSentSince(t *testing.T, s *store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	web := core.Address{Channel: "web", Account: "alice", Chat: "c"}
	tg := core.Address{Channel: "telegram", Account: "b", Chat: "1"}
	se := core.Session{ID: web.SessionID(), Address: web, Phase: core.PhaseOff}
	out := []core.Outgoing{
		{Reply: core.Reply{To: web, Text: "one"}, CreatedAt: t0},
		{Reply: core.Reply{To: web, Text: "two"}, CreatedAt: t0},
		{Reply: core.Reply{To: web, Text: "unsent"}, CreatedAt: t0},
		{Reply: core.Reply{To: tg, Text: "other channel"}, CreatedAt: t0},
		{Reply: core.Reply{To: web, Text: "sent long ago"}, CreatedAt: t0},
	}
	if _, err := s.Commit(ctx, core.Change{Session: &se, Outbox: out}); err != nil {
		t.Fatal(err)
	}
	must(t, s.MarkSent(ctx, out[4].ID, "w0", t0.Add(-time.Hour)))
	must(t, s.MarkSent(ctx, out[1].ID, "w2", t0.Add(time.Second))) // the later id is sent first
	must(t, s.MarkSent(ctx, out[0].ID, "w1", t0.Add(2*time.Second)))
	must(t, s.MarkSent(ctx, out[3].ID, "t1", t0.Add(time.Second)))
	got, err := s.SentSince(ctx, "web", t0.Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Reply.Text != "two" || got[1].Reply.Text != "one" || got[0].ID != out[1].ID || got[0].SessionID != se.ID {
		t.Fatalf("SentSince = %+v", got)
	}
	if got, err := s.SentSince(ctx, "web", t0.Add(-time.Minute), 1); err != nil || len(got) != 1 {
		t.Fatalf("with a limit of 1: %+v, %v", got, err)
	}
}
