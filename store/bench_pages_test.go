package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// BenchmarkBigRows measures what the page size (PageSize) costs the rows that do not fit
// a small page and become overflow chains: plan versions and long answers. write: one
// commit of a session update, a new plan version (about 4 KB of JSON) and a 4 KB
// assistant message, reporting disk-KB/op (write_bytes of /proc/self/io, the whole test
// process) beside the time. read: the plan and a transcript window of 50 such messages.
func BenchmarkBigRows(b *testing.B) {
	ctx := context.Background()
	long := strings.Repeat("A long answer, in words that do not compress into anything. ", 68) // ~4 KB
	body := core.PlanBody{Title: "Migrate the billing jobs", Summary: long[:400]}
	for i := range 12 {
		body.Steps = append(body.Steps, core.Step{ID: fmt.Sprintf("s%d", i+1), Text: long[:250],
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
