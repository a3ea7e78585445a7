package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/plangate/plangate/store"
)

// cmdStoreMigrate is `plangate store migrate`: apply the pending schema migrations to
// the configured store and exit, so an upgrade runs (and can fail) before the service starts.
func cmdStoreMigrate(ctx context.Context, args []string, e procEnv) error {
	cfg, err := loadConfigFlags(newFlags("store migrate"), args, e)
	if err != nil {
		return err
	}
	res, err := migrateStore(ctx, cfg)
	if err != nil {
		return err
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(e.stdout, "%s: schema version %d, up to date\n", res.Path, res.To)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: schema version %d -> %d (applied %s)\n", res.Path, res.From, res.To, strings.Join(res.Applied, ", "))
	return nil
}

// migrateStore applies the pending migrations of the configured driver.
func migrateStore(ctx context.Context, cfg *Config) (store.MigrateResult, error) {
	if cfg.Store.postgres() {
		return store.MigratePostgres(ctx, cfg.Store.DSN)
	}
	if err := makeStoreDir(cfg.Store.Path); err != nil {
		return store.MigrateResult{}, err
	}
	return store.Migrate(ctx, cfg.Store.Path)
}
