package store

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

func TestInboundSeenAndPrune(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	clock := at(0)
	s.now = func() time.Time { return clock }
	keys := []core.InboundKey{
		{Channel: "telegram", Account: "bot1", EventID: "100"},
		{Channel: "telegram", Account: "bot1", EventID: "101"},
		{Channel: "slack", Account: "T1", EventID: "Ev9"},
	}
	for i, k := range keys {
		clock = at(0).Add(time.Duration(i) * time.Hour)
		if _, err := s.Commit(ctx, core.Change{SessionID: "s1", Inbound: &k}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		key  core.InboundKey
		want bool
	}{
		{"recorded", keys[0], true},
		{"other event", core.InboundKey{Channel: "telegram", Account: "bot1", EventID: "102"}, false},
		{"same id, new bot", core.InboundKey{Channel: "telegram", Account: "bot2", EventID: "100"}, false},
		{"same id, other channel", core.InboundKey{Channel: "discord", Account: "bot1", EventID: "100"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.SeenInbound(ctx, tt.key)
			if err != nil || got != tt.want {
				t.Fatalf("SeenInbound(%+v) = %v, %v; want %v", tt.key, got, err, tt.want)
			}
		})
	}

	// Prune everything recorded before the third key.
	n, err := s.PruneInbound(ctx, at(0).Add(90*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("PruneInbound = %d, %v; want 2", n, err)
	}
	for i, k := range keys {
		seen, _ := s.SeenInbound(ctx, k)
		if seen != (i == 2) {
			t.Errorf("after prune, key %d seen = %v", i, seen)
		}
	}
	if n, err := s.PruneInbound(ctx, at(0)); err != nil || n != 0 {
		t.Fatalf("second PruneInbound = %d, %v; want 0", n, err)
	}
}

func TestChannelState(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if _, ok, err := s.ChannelState(ctx, "telegram", "bot1", "offset"); err != nil || ok {
		t.Fatalf("unset state: ok=%v err=%v", ok, err)
	}
	steps := []struct{ channel, account, key, value string }{
		{"telegram", "bot1", "offset", "100"},
		{"telegram", "bot1", "offset", "101"}, // replaces
		{"telegram", "bot2", "offset", "7"},   // another bot is separate
		{"slack", "T1", "cursor", ""},         // empty values are values
	}
	for _, st := range steps {
		if err := s.SetChannelState(ctx, st.channel, st.account, st.key, st.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetChannelState(ctx, "telegram", "bot1", "", "x"); err == nil {
		t.Error("empty key accepted")
	}
	// Survives a reopen.
	s.Close()
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	*s = *s2
	tests := []struct {
		channel, account, key string
		want                  string
		ok                    bool
	}{
		{"telegram", "bot1", "offset", "101", true},
		{"telegram", "bot2", "offset", "7", true},
		{"slack", "T1", "cursor", "", true},
		{"slack", "T1", "offset", "", false},
	}
	for _, tt := range tests {
		got, ok, err := s.ChannelState(ctx, tt.channel, tt.account, tt.key)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("ChannelState(%s, %s, %s) = %q, %v, %v; want %q, %v", tt.channel, tt.account, tt.key, got, ok, err, tt.want, tt.ok)
		}
	}
}

func TestReadsDoNotWaitForWriter(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	seed(t, s, "s1")
	// Hold the write lock with an uncommitted change, as a slow transition would.
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_feedback = 'uncommitted' WHERE id = 's1'`); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	se, err := s.Session(rctx, "s1")
	if err != nil {
		t.Fatalf("read while a write is open: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("read waited %v for the writer", d)
	}
	if se.LastFeedback == "uncommitted" {
		t.Error("read saw uncommitted data")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if se, _ := s.Session(ctx, "s1"); se.LastFeedback != "uncommitted" {
		t.Errorf("read after commit = %q, the read pool does not see committed data", se.LastFeedback)
	}
}
