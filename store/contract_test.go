package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
	"github.com/plangate/plangate/store/storetest"
)

// TestMain stops the throwaway PostgreSQL server, if a test started one.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// opener opens driver on target for the contract suite.
func opener(t *testing.T, driver, target string) func() storetest.Store {
	return func() storetest.Store {
		s, err := store.OpenDriver(context.Background(), driver, target)
		if err != nil {
			t.Fatalf("opening %s store: %v", driver, err)
		}
		return s
	}
}

func TestContractSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() storetest.Store {
		return opener(t, store.DriverSQLite, filepath.Join(t.TempDir(), "plangate.db"))
	})
}

func TestContractPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() storetest.Store {
		return opener(t, store.DriverPostgres, pgtest.Schema(t))
	})
}
