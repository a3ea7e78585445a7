package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// planModel proposes a one-step plan for a message "plan ..." and answers "ok" to
// anything else (a tool result, a decision).
type planModel struct{}

func (planModel) Complete(_ context.Context, req core.ModelRequest) (core.ModelResponse, error) {
	if n := len(req.Messages); n > 0 {
		last := req.Messages[n-1]
		if last.Role == core.RoleUser && strings.HasPrefix(last.Content, "plan ") {
			args, _ := json.Marshal(map[string]any{"title": "Bench", "summary": "One step.", "plan": []map[string]string{{"step": "Do it"}}})
			return core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "c1", Name: "exit_plan_mode", Args: args}}}, nil
		}
	}
	return core.ModelResponse{Text: "ok"}, nil
}

type discard struct{}

func (discard) Send(context.Context, core.Reply) (string, error) { return "", nil }

// benchEngine is one replica: an engine over its own store instance.
func benchEngine(b *testing.B, driver, target string) *engine.Engine {
	st, err := store.OpenDriver(context.Background(), driver, target)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	eng := engine.NewEngine(engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PerSession: true,
		MaxIterations: 5, HistoryMessages: 40, PlanMode: true},
		engine.Deps{Store: st, Model: planModel{}, Out: discard{}, Now: time.Now, NudgeSpecs: nudges.Specs{}})
	b.Cleanup(func() { _ = eng.Wait(context.Background()); st.Close() })
	return eng
}

func benchMsg(chat, text string) core.Message {
	return core.Message{Address: core.Address{Channel: "bench", Account: "a", Chat: chat}, Sender: core.Person{ID: "local"}, Text: text}
}

// replicaDecisions accepts b.N pending plans, spread over the replicas' engines, from
// perReplica goroutines each, and reports decisions/s across replicas. m measures the
// CPU the decisions took.
func replicaDecisions(b *testing.B, engs []*engine.Engine, perReplica int, m *cpuMeter) float64 {
	ctx := context.Background()
	chats := make([]string, b.N)
	for i := range chats {
		chats[i] = fmt.Sprintf("d-%d", i)
		eng := engs[i%len(engs)]
		for _, text := range []string{"/plan on", "plan for " + chats[i]} {
			if err := <-eng.Enqueue(ctx, benchMsg(chats[i], text)); err != nil {
				b.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(engs)*perReplica)
	b.ResetTimer()
	m.Start(b)
	start := time.Now()
	for r, eng := range engs {
		for w := range perReplica {
			wg.Go(func() {
				// Worker w of replica r takes every (len(engs)*perReplica)-th chat.
				for i := r + len(engs)*w; i < len(chats); i += len(engs) * perReplica {
					if err := <-eng.Enqueue(ctx, benchMsg(chats[i], "/plan accept")); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	m.Stop(b)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return float64(b.N) / elapsed.Seconds()
}

// BenchmarkReplicaDecisions is BenchmarkEngineDecisions (core) across replicas: one or
// two engines, each over its own store instance on one PostgreSQL database (SQLite: one
// process, for comparison), 8 concurrent decisions per replica. raw-commits/s is the same
// server's single-row insert transactions at the same concurrency, ratio decisions/s to
// that. Compare replicas=2 with replicas=1 for the scaling across replicas.
//
// Every replica, the benchmark's goroutines and the server share this machine's CPUs:
// client-µs/decision and server-µs/decision are the CPU time one decision took in this
// process and in the server, cores what the decisions kept busy (their sum times the
// rate), machine-busy-% how busy all CPUs were meanwhile, other jobs included. When that
// is near 100 % the rate is the CPUs left divided by the CPU per decision, whatever the
// number of replicas.
func BenchmarkReplicaDecisions(b *testing.B) {
	const perReplica = 8
	for _, tc := range []struct {
		driver   string
		replicas int
	}{{store.DriverSQLite, 1}, {store.DriverPostgres, 1}, {store.DriverPostgres, 2}} {
		b.Run(fmt.Sprintf("%s/replicas=%d", tc.driver, tc.replicas), func(b *testing.B) {
			target, dsn := filepath.Join(b.TempDir(), "plangate.db"), ""
			if tc.driver == store.DriverPostgres {
				target = pgtest.Schema(b)
				dsn = target
			}
			var engs []*engine.Engine
			for range tc.replicas {
				engs = append(engs, benchEngine(b, tc.driver, target))
			}
			m := newCPUMeter(b, dsn)
			rate := replicaDecisions(b, engs, perReplica, m)
			b.ReportMetric(rate, "decisions/s")
			m.Report(b, b.N)
			if tc.driver == store.DriverPostgres {
				raw := pgInsertRate(b, target, perReplica*tc.replicas)
				b.ReportMetric(raw, "raw-commits/s")
				b.ReportMetric(rate/raw, "ratio")
			}
		})
	}
}

// pgInsertRate is single-row insert transactions per second on the server of dsn from
// conc goroutines.
func pgInsertRate(b *testing.B, dsn string, conc int) float64 {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn+fmt.Sprintf(" pool_max_conns=%d", max(conc, 16)))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_bench (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	const per = 100
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range per {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := tx.Exec(ctx, `INSERT INTO raw_bench (v) VALUES ($1)`, fmt.Sprint(i)); err != nil {
					b.Error(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	return float64(conc*per) / time.Since(start).Seconds()
}
