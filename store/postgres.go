package store

// The PostgreSQL driver: several plangate processes share one database.
//
// Isolation: READ COMMITTED, PostgreSQL's default, on purpose. Every guarantee the store
// gives is decided by a single row-level statement, not by what a transaction read
// earlier, and PostgreSQL re-checks such a statement's WHERE clause against the newest
// committed row after waiting for a concurrent writer of that row. So:
//
//   - Compare-and-set on a session: UPDATE sessions ... WHERE id = $ AND version = $.
//     Two replicas committing from the same version both reach the row; the second waits
//     for the first's row lock, then re-evaluates the WHERE against the new version, finds
//     no row, and its whole transaction rolls back with core.ErrConflict. Exactly one wins,
//     and nothing is retried: a retry is the engine's decision, not the store's.
//   - A new session, the inbound de-duplication key, the firing ledger and tool runs are
//     INSERT ... ON CONFLICT DO NOTHING on their primary key: a concurrent insert of the
//     same key waits on the index entry and then affects no row, which the store reports
//     as ErrConflict / ErrDuplicate / "not claimed". The inbound key is the first statement
//     of a transition, so a redelivered event is reported as a duplicate before anything
//     else could fail.
//   - A nudge occurrence is claimed by UPDATE nudges ... WHERE next_fire_at <= $scheduled
//     (row lock, re-checked after waiting) plus the ledger insert in the same transaction:
//     every occurrence is claimed by one replica. Waiting on the row lock is preferred over
//     SELECT ... FOR UPDATE SKIP LOCKED: a skipped occurrence whose claimer then rolls back
//     would be lost, and the wait is one short transaction.
//   - Leases are one INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE owner = $ OR
//     expired: the conflicting row is locked and the condition evaluated on its newest
//     version, so two replicas never both hold a lease.
//
// SERIALIZABLE would add serialization failures (and retries) without protecting anything
// these statements do not already protect. A transition is still one transaction with
// its audit rows, transcript, plans, nudge changes and outbox rows, as on SQLite. The rare
// deadlock between two transitions (say, two cancelling the same nudges) is rolled back by
// the server and reported as core.ErrConflict, like a lost compare-and-set.
//
// Row ids (plan_events, messages, nudges, outbox) come from identity sequences, drawn at
// insert: two concurrent transactions may commit in the other order than their ids, so a
// reader following a table by "id > last seen" on PostgreSQL can miss a row that commits
// late. Within one session, transitions that carry the session are ordered by its row
// lock; a cross-replica follower must allow for this (SQLite's single writer commits in
// id order).
//
// Durability: synchronous_commit as the server is configured (on by default). A lazy
// change (core.Change.Lazy) and the outbox bookkeeping run with SET LOCAL
// synchronous_commit = off: the commit is visible and survives a killed plangate at
// once, and is flushed by the next durable commit or the WAL writer, which is what
// SQLite's synchronous=NORMAL gives.
//
// Round trips: a transition and a nudge claim are one pipelined batch (BEGIN and every
// statement) and a COMMIT sent after the outcomes were checked, two round trips whatever
// the change holds (steps.go); a one-statement write (a lease, an outbox mark) sends its
// COMMIT in the batch, one round trip. Sending a transition's COMMIT before its outcomes
// are known (guarding the checks on the server) was tried and dropped: a killed process's
// batch then still commits on the server after its death was seen and its work taken
// over, and replies were sent twice. Concurrent commits are grouped by PostgreSQL's WAL
// flush: commits waiting for the same flush complete together, so the pool size
// (pool_max_conns in the DSN) bounds how many transitions share an fsync. A person's
// message checks its inbound key and reads its session and current plan in one round trip
// (SessionPlan).
//
// Reads and the single-statement writes go through database/sql on the same pool
// (pgx's stdlib adapter), so they share their code with the SQLite driver.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// Drivers, as named by the store.driver configuration key.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// defaultPoolConns is the pool size unless the DSN sets pool_max_conns. pgx's default
// (the number of CPUs, at least 4) caps how many transitions share one WAL flush; 16 let
// 8 concurrent sessions commit half again as fast here, and two replicas stay far below
// PostgreSQL's default max_connections of 100.
const defaultPoolConns = 16

// OpenDriver opens the store of the given driver: for "sqlite" (or "") target is the
// database file, for "postgres" a pgx connection string (a postgres:// URL or
// "host=... dbname=..." keywords; pool_max_conns sets the pool size, 16 by default). Pending migrations
// are applied either way.
func OpenDriver(ctx context.Context, driver, target string) (*Store, error) {
	switch driver {
	case "", DriverSQLite:
		return Open(ctx, target)
	case DriverPostgres:
		return OpenPostgres(ctx, target)
	}
	return nil, fmt.Errorf("opening store: unknown driver %q (want %s or %s)", driver, DriverSQLite, DriverPostgres)
}

// OpenPostgres connects to the PostgreSQL database named by dsn and applies pending
// migrations. Several processes may open the same database.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("opening store: store.dsn is empty")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse error repeats the DSN, password included: do not show it.
		return nil, fmt.Errorf("opening store: %w", errBadDSN)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultPoolConns
	}
	where := fmt.Sprintf("postgres %s/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", where, err)
	}
	s, err := openPool(ctx, pool, where)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening store %s: %w", where, err)
	}
	return s, nil
}

func openPool(ctx context.Context, pool *pgxpool.Pool, where string) (*Store, error) {
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	w := sqlDB{DB: stdlib.OpenDBFromPool(pool), d: postgresDialect}
	if err := migrate(ctx, w, time.Now); err != nil {
		w.Close()
		return nil, err
	}
	return &Store{path: where, w: w, r: w, now: time.Now, pool: pool, stateMu: &sync.Mutex{}}, nil
}

// Ping checks that the database answers and, on SQLite, can still make writes durable
// (Health), for /readyz: on PostgreSQL an unreachable server makes the replica unready,
// so a load balancer stops sending it work. The error names no credentials.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.Health(); err != nil { // answers, but can no longer make a write durable
		return err
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("store %s does not answer: %w", s.path, err)
	}
	return nil
}
