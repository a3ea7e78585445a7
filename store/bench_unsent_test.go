package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// BenchmarkUnsentOutbox lists the unsent replies of an outbox of 50,000 sent ones (a day
// of a busy gateway, kept by the prune) and 5 unsent at its end, as the retry loop does
// every 15 s; stuck: the same outbox with its oldest row unsent (a reply whose sends keep
// failing, until its five attempts or its hour are up). Either reads the partial index
// outbox_unsent, which holds the unsent rows alone.
func BenchmarkUnsentOutbox(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		stuck bool
	}{{"fresh", false}, {"stuck", true}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := openTest(b)
			fillSentOutbox(b, s, 50000, c.stuck)
			for b.Loop() {
				rows, err := s.UnsentOutbox(ctx, []string{"telegram", "slack"}, 0)
				if err != nil || len(rows) < 5 {
					b.Fatal(len(rows), err)
				}
			}
		})
	}
}

// fillSentOutbox writes n sent replies of about 200 bytes (the first one unsent when
// stuck) and 5 unsent ones after them.
func fillSentOutbox(b *testing.B, s *Store, n int, stuck bool) {
	ctx := context.Background()
	to := core.Address{Channel: "telegram", Account: "123456789", Chat: "987654321"}
	body, err := json.Marshal(core.Reply{To: to, Text: strings.Repeat("An answer of a few words. ", 6), InReplyTo: "700000001"})
	if err != nil {
		b.Fatal(err)
	}
	t0 := formatTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if _, err := s.w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO outbox (session_id, channel, reply, created_at, attempts, sent_at, platform_id, owner)
		SELECT 'telegram:123456789:' || (i % 50), 'telegram', ?, ?, 1, ?, 'm' || i, 'host/1/abcdef' FROM n`,
		n, string(body), t0, t0); err != nil {
		b.Fatal(err)
	}
	if stuck {
		if _, err := s.w.ExecContext(ctx, `UPDATE outbox SET sent_at = NULL WHERE id = (SELECT min(id) FROM outbox)`); err != nil {
			b.Fatal(err)
		}
	}
	out := make([]core.Outgoing, 5)
	for i := range out {
		out[i] = core.Outgoing{Reply: core.Reply{To: to, Text: "unsent"}, Owner: "host/1/abcdef"}
	}
	if _, err := s.Commit(ctx, core.Change{SessionID: to.SessionID(), Outbox: out}); err != nil {
		b.Fatal(err)
	}
}
