package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// Replicas starting together on an empty database migrate it once: the migration lock
// serializes them and the second finds the schema current.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := pgtest.Schema(t)
	var wg sync.WaitGroup
	stores := make([]*store.Store, 3)
	errs := make([]error, 3)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = store.OpenDriver(t.Context(), store.DriverPostgres, dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	se := core.Session{ID: "s1", Phase: core.PhasePlanning}
	if _, err := stores[0].Commit(t.Context(), core.Change{Session: &se}); err != nil {
		t.Fatal(err)
	}
	if got, err := stores[2].Session(t.Context(), "s1"); err != nil || got.Version != 1 {
		t.Fatalf("another replica reads %+v, %v", got, err)
	}
}

func TestOpenDriverErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := store.OpenDriver(ctx, "mysql", "x"); err == nil || !strings.Contains(err.Error(), `unknown driver "mysql"`) {
		t.Fatalf("unknown driver: %v", err)
	}
	if _, err := store.OpenDriver(ctx, store.DriverPostgres, " "); err == nil || !strings.Contains(err.Error(), "store.dsn is empty") {
		t.Fatalf("empty dsn: %v", err)
	}
	// A malformed DSN is reported without repeating it: it may hold a password.
	_, err := store.OpenDriver(ctx, store.DriverPostgres, "postgres://u:s3cret@h:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("malformed dsn: %v", err)
	}
}

// A store whose server went away says so (Ping, Commit) instead of hanging, and a
// transition that failed that way is not half-stored when the server returns.
func TestPostgresUnreachable(t *testing.T) {
	srv := pgtest.Own(t)
	s, err := store.OpenDriver(t.Context(), store.DriverPostgres, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping while up: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping succeeded with the server stopped")
	}
	se := core.Session{ID: "s1", Phase: core.PhasePlanning}
	if _, err := s.Commit(t.Context(), core.Change{Session: &se}); err == nil {
		t.Fatal("Commit succeeded with the server stopped")
	}
}
