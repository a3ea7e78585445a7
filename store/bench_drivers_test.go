package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// The driver benchmarks compare a typical transition through Commit (a session update
// with one audit event and one transcript message) on both drivers, sequentially and
// from 8 concurrent sessions, against the ceiling of the same server: a transaction
// inserting one row. Concurrent commits share WAL flushes (PostgreSQL) or queue on the
// single writer (SQLite), which is what the parallel variants show.

// parallelism * GOMAXPROCS goroutines commit at once in the parallel variants.
const parallelism = 4

func benchStores(b *testing.B) map[string]func() *store.Store {
	return map[string]func() *store.Store{
		"sqlite": func() *store.Store {
			return openBench(b, store.DriverSQLite, filepath.Join(b.TempDir(), "plangate.db"))
		},
		"postgres": func() *store.Store {
			return openBench(b, store.DriverPostgres, pgtest.Schema(b))
		},
	}
}

func openBench(b *testing.B, driver, target string) *store.Store {
	s, err := store.OpenDriver(context.Background(), driver, target)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// transitions commits updates of session id until more is false.
func transitions(b *testing.B, s *store.Store, id string, more func() bool) {
	ctx := context.Background()
	se := core.Session{ID: id, Phase: core.PhasePlanning, Owner: "u1"}
	cur, err := s.Commit(ctx, core.Change{Session: &se})
	if err != nil {
		b.Error(err)
		return
	}
	for i := 0; more(); i++ {
		cur.RejectionCount = i % 5
		next, err := s.Commit(ctx, core.Change{
			Session:  &cur,
			Events:   []core.Event{{Kind: core.EventStepUpdated, Actor: core.AgentActor, Channel: "terminal", Detail: "step 1"}},
			Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: "working on step 1"}},
		})
		if err != nil {
			b.Error(err)
			return
		}
		cur = next
	}
}

func BenchmarkDriverCommit(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[name]
		b.Run(name, func(b *testing.B) {
			s := open()
			b.ResetTimer()
			transitions(b, s, "bench", b.Loop)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			s := open()
			var n atomic.Int64
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				transitions(b, s, fmt.Sprint("bench-", n.Add(1)), pb.Next)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// BenchmarkPostgresInsert is the ceiling of the test server: BEGIN, one INSERT, COMMIT.
func BenchmarkPostgresInsert(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Schema(b)+" pool_max_conns=16") // as the store's pool
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	insert := pgtest.Inserts(b, pool)
	b.Run("serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := insert(i); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				if err := insert(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	})
}
