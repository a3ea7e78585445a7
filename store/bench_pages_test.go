package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// BenchmarkBigRows measures what the page size (PageSize) costs the rows that do not fit
// a small page and become overflow chains: plan versions and long answers. write: one
// commit of a session update, a new plan version (about 4 KB of JSON) and a 4 KB
// assistant message, reporting disk-KB/op (write_bytes of /proc/self/io, the whole test
// process) beside the time. read: the plan and a transcript window of 50 such messages.
func BenchmarkBigRows(b *testing.B) {
	ctx := context.Background()
	long := strings.Repeat("A long answer, in words that do not compress into anything. ", 68) // ~4 KB
	body := plan.Body{Title: "Migrate the billing jobs", Summary: long[:400]}
	for i := range 12 {
		body.Steps = append(body.Steps, plan.Step{ID: fmt.Sprintf("s%d", i+1), Text: long[:250],
			AcceptanceCriteria: []string{"the job runs on the new queue"}})
	}
	setup := func(b *testing.B) (*Store, core.Session) {
		s, _ := openTest(b)
		cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "bench", Phase: core.PhasePlanning, Owner: "u1"}})
		if err != nil {
			b.Fatal(err)
		}
		return s, cur
	}
	commit := func(b *testing.B, s *Store, cur core.Session, i int) core.Session {
		p := core.Plan{ID: fmt.Sprintf("p%d", i), SessionID: "bench", Version: i + 1, Status: core.PlanPending, Body: body}
		next, err := s.Commit(ctx, core.Change{Session: &cur, Plans: []core.Plan{p},
			Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: long}}})
		if err != nil {
			b.Fatal(err)
		}
		return next
	}
	b.Run("write", func(b *testing.B) {
		s, cur := setup(b)
		from := writeBytes(b)
		for i := 0; b.Loop(); i++ {
			cur = commit(b, s, cur, i)
		}
		b.ReportMetric(float64(writeBytes(b)-from)/1024/float64(b.N), "disk-KB/op")
	})
	b.Run("read", func(b *testing.B) {
		s, cur := setup(b)
		for i := range 200 {
			cur = commit(b, s, cur, i)
		}
		for i := 0; b.Loop(); i++ {
			if _, err := s.Plan(ctx, fmt.Sprintf("p%d", i%200)); err != nil {
				b.Fatal(err)
			}
			if ms, err := s.Transcript(ctx, "bench", 50); err != nil || len(ms) != 50 {
				b.Fatal(len(ms), err)
			}
		}
	})
}

// BenchmarkMessagePages is a spaced plain message's six store transactions on their own
// (the durable inbox save, the lease acquire, the turn's lazy commit of the session, two
// messages, the inbound key and the answer's outbox row, the mark-sent, the release, the
// lazy inbox save), on files of three page sizes (made as an earlier
// plangate or an operator would: existing files keep theirs) and with two sets of row
// sizes: rows=bench as in BenchmarkTelegramRoundTrip, rows=real with a 700-byte update
// in the inbox record, a 35-byte lease owner and a 400-byte answer. With checkpoints
// off, the WAL's growth is what the message wrote: wal-KB/msg and frames/msg (pages).
func BenchmarkMessagePages(b *testing.B) {
	type rows struct{ update, owner, answer int }
	for _, rs := range []struct {
		name string
		rows
	}{{"bench", rows{270, 20, 80}}, {"real", rows{700, 35, 400}}} {
		for _, size := range []int{4096, 1024, 512} {
			b.Run(fmt.Sprintf("rows=%s/pages=%d", rs.name, size), func(b *testing.B) { benchMessagePages(b, size, rs.update, rs.owner, rs.answer) })
		}
	}
}

func benchMessagePages(b *testing.B, pageSize, update, ownerLen, answer int) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "plangate.db")
	db, err := sql.Open("sqlite3", fileURI(path))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA page_size = %d; PRAGMA journal_mode = WAL`, pageSize)); err != nil {
		b.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		b.Fatal(err)
	}
	const sid = "telegram:123456789:987654321"
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: sid, Phase: core.PhaseOff}})
	if err != nil {
		b.Fatal(err)
	}
	owner, lease := strings.Repeat("o", ownerLen), "session:"+sid
	pending, done := `{"handled":1,"pending":"`+strings.Repeat("u", update-30)+`"}`, `{"handled":1,"next":2}`
	now := time.Now()
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		return fi.Size()
	}
	from := walSize()
	for i := 0; b.Loop(); i++ {
		if err := s.SetChannelState(ctx, "telegram", "123456789", "updates", pending); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := s.AcquireLease(ctx, lease, owner, now, time.Minute); err != nil || !ok {
			b.Fatal(ok, err)
		}
		out := []core.Outgoing{{SessionID: sid, Owner: owner, Reply: core.Reply{To: core.Address{Channel: "telegram"}, Text: strings.Repeat("a", answer)}}}
		next, err := s.Commit(ctx, core.Change{Session: &cur, Lazy: true, Outbox: out,
			Inbound: &core.InboundKey{Channel: "telegram", Account: "123456789", EventID: strconv.Itoa(700000000 + i)},
			Messages: []core.ChatMessage{{Role: core.RoleUser, Content: strings.Repeat("q", 100)},
				{Role: core.RoleAssistant, Content: strings.Repeat("a", answer)}}})
		if err != nil {
			b.Fatal(err)
		}
		cur = next
		if err := s.MarkSent(ctx, out[0].ID, "12345", now); err != nil {
			b.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, lease, owner); err != nil {
			b.Fatal(err)
		}
		if err := s.SetChannelStateLazy(ctx, "telegram", "123456789", "updates", done); err != nil {
			b.Fatal(err)
		}
	}
	grown := float64(walSize() - from)
	b.ReportMetric(grown/1024/float64(b.N), "wal-KB/msg")
	b.ReportMetric(grown/float64(pageSize+24)/float64(b.N), "frames/msg")
}

// writeBytes is the process's write_bytes from /proc/self/io: what it caused to be
// written to storage so far.
func writeBytes(b *testing.B) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io:", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no write_bytes in /proc/self/io")
	return 0
}
