//go:build unix

package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// BenchmarkMessageStore is what a plain message for the agent asks of the store, step
// by step, on SQLite: read (the inbound key, the session and its plan in one read), the
// turn's lazy commit (the key, the session row, the person's message and the answer, the
// answer's outbox row), and the answer's mark-sent in its own lazy commit. Each sub-benchmark times one of them; cpu-us/op is the process's
// CPU (getrusage: every thread, the scheduler's wake-ups included) per operation, which
// a shared machine disturbs less than the wall time.
func BenchmarkMessageStore(b *testing.B) {
	ctx := context.Background()
	addr := core.Address{Channel: "telegram", Account: "bot", Chat: "42"}
	setup := func(b *testing.B) (*Store, core.Session) {
		s, _ := openTest(b)
		se, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: addr.SessionID(), Address: addr, Phase: core.PhaseOff, Owner: "u1"}})
		if err != nil {
			b.Fatal(err)
		}
		return s, se
	}
	turn := func(b *testing.B, s *Store, cur core.Session, i int) (core.Session, int64) {
		key := core.InboundKey{Channel: "telegram", Account: "bot", EventID: fmt.Sprint(i)}
		now := time.Now()
		ch := core.Change{Session: &cur, Inbound: &key, Lazy: true,
			Messages: []core.ChatMessage{{Role: core.RoleUser, Name: "u1", Content: "hello there", At: now},
				{Role: core.RoleAssistant, Content: "re: hello there", At: now}},
			Outbox: []core.Outgoing{{SessionID: cur.ID, Reply: core.Reply{To: addr, Text: "re: hello there", InReplyTo: fmt.Sprint(i)}, CreatedAt: now}}}
		next, err := s.Commit(ctx, ch)
		if err != nil {
			b.Fatal(err)
		}
		return next, ch.Outbox[0].ID
	}
	b.Run("read", func(b *testing.B) {
		s, se := setup(b)
		start := coretest.ProcessCPU(b)
		for i := 0; b.Loop(); i++ {
			key := core.InboundKey{Channel: "telegram", Account: "bot", EventID: fmt.Sprint(i)}
			if _, _, err := s.SessionPlan(ctx, se.ID, &key); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("commit", func(b *testing.B) {
		s, cur := setup(b)
		start := coretest.ProcessCPU(b)
		for i := 0; b.Loop(); i++ {
			cur, _ = turn(b, s, cur, i)
		}
		reportCPU(b, start)
	})
	b.Run("mark", func(b *testing.B) {
		s, cur := setup(b)
		ids := make([]int64, b.N)
		for i := range ids {
			cur, ids[i] = turn(b, s, cur, i)
		}
		b.ResetTimer()
		start := coretest.ProcessCPU(b)
		for _, id := range ids {
			if err := s.MarkSent(ctx, id, "m1", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
}

// reportCPU reports the CPU used since start per operation.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(coretest.ProcessCPU(b)-start)/float64(b.N)/1e3, "cpu-us/op")
}
