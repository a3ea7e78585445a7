package store

// The PostgreSQL driver: several plangate processes share one database.
//
// Isolation: READ COMMITTED, PostgreSQL's default, on purpose. Every guarantee the store
// gives is decided by a single row-level statement, whose WHERE clause PostgreSQL
// re-checks against the newest committed row after waiting for a concurrent writer of it:
//
//   - Compare-and-set on a session (UPDATE ... WHERE id = $ AND version = $): of two
//     replicas committing from the same version, the second waits for the first's row
//     lock, then finds no row and rolls back with core.ErrConflict. The store never
//     retries: that is the engine's decision.
//   - A new session, the inbound key, the firing ledger and tool runs are INSERT ... ON
//     CONFLICT DO NOTHING on their primary key: a concurrent insert of the same key waits
//     on the index entry, then affects no row (ErrConflict, ErrDuplicate, "not claimed").
//     The inbound key is a transition's first statement, so a redelivered event is
//     reported as a duplicate before anything else could fail.
//   - A nudge occurrence is claimed by UPDATE nudges ... WHERE next_fire_at <= $scheduled
//     plus the ledger insert in the same transaction. It waits on the row lock rather
//     than SELECT ... FOR UPDATE SKIP LOCKED: an occurrence skipped while its claimer
//     then rolls back would be lost.
//   - A lease is one INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE owner = $ OR
//     expired, evaluated on the locked newest row: two replicas never both hold it.
//
// SERIALIZABLE would add serialization failures (and retries) and protect nothing more.
// The rare deadlock between two transitions is rolled back by the server and reported as
// core.ErrConflict, like a lost compare-and-set.
//
// Row ids (plan_events, messages, nudges, outbox) come from identity sequences drawn at
// insert, so two transactions may commit in the other order than their ids: a reader
// following a table by "id > last seen" can miss a row that commits late (SQLite's
// single writer commits in id order).
//
// Durability: synchronous_commit as the server is configured. A lazy change and the
// outbox bookkeeping run with SET LOCAL synchronous_commit = off: visible at once,
// surviving a killed plangate, flushed by the next durable commit or the WAL writer, as
// SQLite's synchronous=NORMAL.
//
// Round trips: a transition is one pipelined batch (BEGIN and every statement) and a
// COMMIT sent once the outcomes were checked (steps.go); a one-statement write sends its
// COMMIT in the batch. A transition's COMMIT is never sent before its outcomes are known:
// a killed process's batch would still commit after its work was taken over, and replies
// would go out twice. Concurrent commits share PostgreSQL's WAL flush, so the pool size
// (pool_max_conns) bounds how many share an fsync. Reads and single-statement writes go
// through database/sql on the same pool (pgx's stdlib adapter), sharing the SQLite code.

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
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening store %s: connecting: %w", where, err)
	}
	w := sqlDB{DB: stdlib.OpenDBFromPool(pool), d: postgresDialect}
	if err := migrate(ctx, w, time.Now); err != nil {
		w.Close()
		pool.Close()
		return nil, fmt.Errorf("opening store %s: %w", where, err)
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
