package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// BenchmarkSQLiteCommit measures the raw rate of single-row committed transactions with
// the store's DSN at synchronous=FULL (WAL, immediate transactions, the COMMIT fsyncs):
// the rate of one fsynced commit at a time on this disk.
func BenchmarkSQLiteCommit(b *testing.B) {
	ctx := context.Background()
	abs, err := filepath.Abs(filepath.Join(b.TempDir(), "raw.db"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", strings.Replace(writerDSN(abs), "_synchronous=NORMAL", "_synchronous=FULL", 1))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkStoreCommit measures a typical transition through Commit: a session update
// with one audit event and one transcript message.
func BenchmarkStoreCommit(b *testing.B) {
	ctx := context.Background()
	s, _ := openTest(b)
	cur, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "bench", Phase: core.PhasePlanning, Owner: "u1"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cur.RejectionCount = i % 5
		next, err := s.Commit(ctx, core.Change{
			Session:  &cur,
			Events:   []core.Event{{Kind: core.EventStepUpdated, Actor: core.AgentActor, Channel: "terminal", Detail: "step 1"}},
			Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: "working on step 1"}},
		})
		if err != nil {
			b.Fatal(err)
		}
		cur = next
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
